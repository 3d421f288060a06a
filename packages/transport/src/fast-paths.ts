// The transport's fast paths and whether this process has each. The pooler's CPU per transaction
// is measured with them (docs/performance.md); without one the same bytes go through Node's public
// API, slower. Each needs something a Node release can take away (an internal field, a native
// module that did not build), so `quicpool --version` and the start banner print this list, and
// test/fast-paths.test.ts fails on a Node where one is off instead of a release getting slower.
import { udpIoStatus } from './quic/io/open.js';
import { directWriteSupport } from './tcp/direct-write.js';
import { readIntoSupport } from './tcp/read-into.js';

export type FastPathName = 'tcpDirectWrite' | 'tcpReadInto' | 'udpBatched';

export interface FastPath {
  readonly name: FastPathName;
  /** What it does, in a few words. */
  readonly what: string;
  readonly active: boolean;
  /** Why it is not active (null when it is). */
  readonly reason: string | null;
  /** The environment variable that turns it off (for an A/B, or a suspected bug). */
  readonly off: string;
}

export function fastPaths(): readonly FastPath[] {
  const write = directWriteSupport();
  const read = readIntoSupport();
  const udp = udpIoStatus();
  return [
    { name: 'tcpDirectWrite', what: 'TCP writes straight to the libuv handle', active: write.available, reason: write.reason, off: 'QUICPOOL_TCP_DIRECT_WRITE=0' },
    { name: 'tcpReadInto', what: 'TCP reads into reused buffers', active: read.available, reason: read.reason, off: 'QUICPOOL_TCP_READ_INTO=0' },
    { name: 'udpBatched', what: 'QUIC datagrams by recvmmsg/sendmmsg (@quicpool/udp)', active: udp.kind === 'native', reason: udp.reason, off: 'QUICPOOL_UDP_IO=dgram' },
  ];
}

/** One line: "tcpDirectWrite on, tcpReadInto on, udpBatched off (reason)". */
export function fastPathsLine(paths: readonly FastPath[] = fastPaths()): string {
  return paths.map((p) => (p.active ? `${p.name} on` : `${p.name} OFF (${p.reason ?? 'unknown'})`)).join(', ');
}
