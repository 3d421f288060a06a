// Choosing the I/O path of an endpoint: the native module when it loads, node:dgram otherwise
// (one process warning saying so, once). `QUICPOOL_UDP_IO=native|dgram|auto` overrides the
// endpoint option, so a deployment (or a test run) can force either path without code changes.
import { loadUdpBinding } from '@quicpool/udp';
import type { DatagramIo, DatagramIoOptions, UdpIoKind, UdpIoMode } from './datagram-io.js';
import { DgramIo } from './dgram-io.js';
import { NativeIo } from './native-io.js';

/** What `auto` resolves to in this process, and why the native path is not used when it is not. */
export function udpIoStatus(): { kind: UdpIoKind; reason: string | null } {
  const mode = modeFromEnv() ?? 'auto';
  if (mode === 'dgram') return { kind: 'dgram', reason: 'QUICPOOL_UDP_IO=dgram' };
  const s = loadUdpBinding();
  return s.available ? { kind: 'native', reason: null } : { kind: 'dgram', reason: s.reason };
}

function modeFromEnv(): UdpIoMode | null {
  const v = process.env.QUICPOOL_UDP_IO;
  if (v === undefined || v === '') return null;
  if (v === 'auto' || v === 'native' || v === 'dgram') return v;
  throw new RangeError(`QUICPOOL_UDP_IO must be auto, native or dgram (got ${JSON.stringify(v)})`);
}

let warned = false;

export async function openDatagramIo(option: UdpIoMode, o: DatagramIoOptions): Promise<DatagramIo> {
  const mode = modeFromEnv() ?? option;
  if (mode === 'dgram') return DgramIo.open(o);
  const s = loadUdpBinding();
  if (s.available) return new NativeIo(o);
  if (mode === 'native') throw new Error(`native UDP I/O requested (udpIo: 'native' or QUICPOOL_UDP_IO=native) but unavailable: ${s.reason}`);
  if (!warned) {
    warned = true;
    process.emitWarning(`native UDP module unavailable (${s.reason}); QUIC uses node:dgram`, { code: 'QUICPOOL_UDP_FALLBACK' });
  }
  return DgramIo.open(o);
}
