// Loading the Node-API module (src/native/udp.c): a prebuilt binary shipped in prebuilds/, or the
// one node-gyp built into build/Release. Loading never throws: it answers with the module or the
// reason it is not there, so callers can fall back to node:dgram and say why.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** int32 values per datagram in the metadata arrays (see `Meta`). */
export const META_INTS = 8;

/** Field offsets within one metadata entry. */
export const Meta = {
  /** Byte offset of the datagram in the receive or send buffer. */
  Offset: 0,
  Length: 1,
  /** 4 or 6; in a send entry, 0 means "the connected peer". */
  Family: 2,
  Port: 3,
  /** IPv4: the address as one host-order word; IPv6: four host-order words from here. */
  Address: 4,
} as const;

/** Counters kept by the native socket (all datagram counts are per datagram, not per syscall). */
export interface UdpStats {
  recvCalls: number;
  datagramsIn: number;
  bytesIn: number;
  /** Datagrams that arrived coalesced by GRO, beyond the first of their run. */
  groMerged: number;
  truncated: number;
  sendCalls: number;
  datagramsOut: number;
  bytesOut: number;
  /** sendmmsg messages that carried more than one datagram (UDP_SEGMENT). */
  gsoSends: number;
  eagain: number;
  /** Datagrams copied aside because the kernel's send buffer was full; sent once it has room. */
  queued: number;
  /** Datagrams dropped because that queue was full. */
  queueDropped: number;
  sendErrors: number;
  recvErrors: number;
  /** Times the path refused a GSO send (GSO is then off for the socket). */
  gsoFallbacks: number;
}

export interface UdpSocketInfo {
  fd: number;
  family: 4 | 6;
  address?: string;
  port?: number;
  gso: boolean;
  gro: boolean;
  connected: boolean;
  closed: boolean;
  /** Datagrams waiting for room in the kernel's send buffer. */
  pending: number;
  recvBufferBytes?: number;
  sendBufferBytes?: number;
}

/** The process at the other end of a unix socket, as the kernel recorded it at connect(). */
export interface PeerCredentials {
  readonly pid: number;
  readonly uid: number;
  readonly gid: number;
}

/** Options of the native constructor (the memory is the caller's). */
export interface RawSocketOptions {
  family: 4 | 6;
  address: string;
  port: number;
  /** Adopt a dup() of this bound socket instead of making one. */
  fd?: number;
  connectAddress?: string;
  connectPort?: number;
  recvBufferBytes: number;
  sendBufferBytes: number;
  gso: boolean;
  gro: boolean;
  rxBuffer: ArrayBuffer;
  rxSlots: number;
  rxSlotBytes: number;
  rxMeta: Int32Array;
  txBuffer: ArrayBuffer;
  txMeta: Int32Array;
  onDatagrams(count: number): void;
  onError(errno: number, syscall: string): void;
}

export interface RawSocket {
  /** Sends tx entries [0, count); returns 0 or the last (negative) errno met. */
  send(count: number): number;
  close(): void;
  ref(on: boolean): void;
  info(): UdpSocketInfo;
  stats(): UdpStats;
}

/** Options of `reuseportGroup` (see groups.c). */
export interface RawGroupOptions {
  protocol: 'udp' | 'tcp';
  family: 4 | 6;
  address: string;
  port: number;
  count: number;
  backlog?: number;
  recvBufferBytes?: number;
  sendBufferBytes?: number;
  /** Classic BPF, four int32 per instruction: code, jt, jf, k. UDP only. */
  program?: Int32Array;
}

export interface RawGroup {
  fds: number[];
  port: number;
  /** null: no program given; 0: attached; else the errno of SO_ATTACH_REUSEPORT_CBPF. */
  steering: number | null;
}

export interface UdpBinding {
  UdpSocket: new (options: RawSocketOptions) => RawSocket;
  /** Absent in builds older than the socket groups. */
  reuseportGroup?(options: RawGroupOptions): RawGroup;
  dupFd?(fd: number): number;
  closeFd?(fd: number): void;
  formatAddress(family: number, a0: number, a1: number, a2: number, a3: number): string;
  parseAddress(text: string, out: Int32Array): boolean;
  /** SO_PEERCRED of a connected unix socket; null when the fd has none. Absent in older builds. */
  peerCredentials?(fd: number): PeerCredentials | null;
  META_INTS: number;
  MAX_SEGMENTS: number;
}

export type BindingStatus = { available: true; binding: UdpBinding; path: string } | { available: false; reason: string };

let cached: BindingStatus | undefined;

/** The package folder: two levels above this file in src/ and in dist/ alike. */
const packageRoot = join(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * The native module, or why it is unavailable. `QUICPOOL_UDP_NATIVE_PATH` loads the module from
 * that file instead (the tests point it at a file that is not a module to exercise the fallback).
 */
export function loadUdpBinding(): BindingStatus {
  if (cached !== undefined) return cached;
  cached = tryLoad();
  return cached;
}

function tryLoad(): BindingStatus {
  if (process.platform !== 'linux') return { available: false, reason: `recvmmsg/sendmmsg/GSO are Linux's (this is ${process.platform})` };
  const require = createRequire(import.meta.url);
  const override = process.env.QUICPOOL_UDP_NATIVE_PATH;
  try {
    let path: string;
    if (override !== undefined && override !== '') {
      path = override;
    } else {
      const gypBuild = require('node-gyp-build') as { resolve(dir: string): string };
      path = gypBuild.resolve(packageRoot);
    }
    const binding = require(path) as Partial<UdpBinding>;
    if (typeof binding.UdpSocket !== 'function' || binding.META_INTS !== META_INTS) {
      return { available: false, reason: `${path} is not this version's module` };
    }
    return { available: true, binding: binding as UdpBinding, path };
  } catch (err) {
    const msg = err instanceof Error ? err.message.split('\n')[0]! : String(err);
    return { available: false, reason: msg };
  }
}
