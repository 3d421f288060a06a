// Sockets for a server with one worker per core: N sockets on one address and port through
// SO_REUSEPORT (UDP, or listening TCP), made in one call so that their order in the kernel's
// reuseport group is the order of `fds`. A classic BPF program attached to a UDP group picks the
// member for each datagram (its return value is the member's index). The group's maker keeps the
// descriptors; each worker adopts a dup (`dupSocket`, or `BatchedUdpSocket.open({ fd })`), so a
// worker that goes away leaves its socket, and every index, in place. Linux only, native module only.
import { isIPv6 } from 'node:net';
import { loadUdpBinding } from './binding.js';
import type { UdpBinding } from './binding.js';
import { errnoException } from './socket.js';

/** One classic BPF instruction: [code, jt, jf, k] (struct sock_filter). */
export type BpfInstruction = readonly [code: number, jt: number, jf: number, k: number];

export interface SocketGroupOptions {
  readonly protocol: 'udp' | 'tcp';
  /** IP literal to bind; an IPv6 one makes dual-stack sockets. */
  readonly host: string;
  /** 0: the first member gets a free port and the others join it. */
  readonly port: number;
  /** Members (1-256). */
  readonly count: number;
  /** TCP: the listen(2) backlog of each member. Default 511 (Node's). */
  readonly backlog?: number;
  /** UDP: kernel buffers of each member (beyond rmem_max/wmem_max when root). */
  readonly recvBufferBytes?: number;
  readonly sendBufferBytes?: number;
  /** UDP: the steering program (SO_ATTACH_REUSEPORT_CBPF). */
  readonly program?: readonly BpfInstruction[];
}

/** Whether the program steers the group's datagrams, and if not, why. */
export type Steering = { readonly kind: 'bpf' } | { readonly kind: 'none'; readonly reason: string };

export interface SocketGroup {
  readonly protocol: 'udp' | 'tcp';
  readonly fds: readonly number[];
  readonly port: number;
  readonly steering: Steering;
  /** Closes the maker's descriptors (dups adopted elsewhere stay open until closed there). */
  close(): void;
}

export type SocketGroupSupport = { readonly available: true } | { readonly available: false; readonly reason: string };

function groupBinding(): Required<Pick<UdpBinding, 'reuseportGroup' | 'dupFd' | 'closeFd'>> | string {
  const s = loadUdpBinding();
  if (!s.available) return s.reason;
  const { reuseportGroup, dupFd, closeFd } = s.binding;
  if (reuseportGroup === undefined || dupFd === undefined || closeFd === undefined) return `${s.path} predates socket groups`;
  return { reuseportGroup, dupFd, closeFd };
}

/** Whether this process can make socket groups (the native module with groups is loaded). */
export function socketGroupSupport(): SocketGroupSupport {
  const b = groupBinding();
  return typeof b === 'string' ? { available: false, reason: b } : { available: true };
}

function required(): Exclude<ReturnType<typeof groupBinding>, string> {
  const b = groupBinding();
  if (typeof b === 'string') throw new Error(`socket groups unavailable: ${b}`);
  return b;
}

/** Makes the group, or throws (an ErrnoException for a failed system call, e.g. EADDRINUSE). */
export function reuseportGroup(o: SocketGroupOptions): SocketGroup {
  const b = required();
  const program = o.program === undefined ? undefined : Int32Array.from(o.program.flat());
  let raw;
  try {
    raw = b.reuseportGroup({
      protocol: o.protocol,
      family: isIPv6(o.host) ? 6 : 4,
      address: o.host,
      port: o.port,
      count: o.count,
      ...(o.backlog !== undefined ? { backlog: o.backlog } : {}),
      ...(o.recvBufferBytes !== undefined ? { recvBufferBytes: o.recvBufferBytes } : {}),
      ...(o.sendBufferBytes !== undefined ? { sendBufferBytes: o.sendBufferBytes } : {}),
      ...(program !== undefined ? { program } : {}),
    });
  } catch (err) {
    const errno = (err as { errno?: unknown }).errno;
    if (typeof errno === 'number') throw errnoException(errno, (err as Error).message.split(':')[0] ?? 'socket');
    throw err;
  }
  const steering: Steering =
    raw.steering === 0
      ? { kind: 'bpf' }
      : { kind: 'none', reason: raw.steering === null ? 'no program' : `SO_ATTACH_REUSEPORT_CBPF refused: ${errnoException(raw.steering, 'setsockopt').code ?? raw.steering}` };
  let open = true;
  return {
    protocol: o.protocol,
    fds: raw.fds,
    port: raw.port,
    steering,
    close(): void {
      if (!open) return;
      open = false;
      for (const fd of raw.fds) b.closeFd(fd);
    },
  };
}

/** A new descriptor for the socket behind `fd` (what a worker hands to `net.Server#listen({ fd })`). */
export function dupSocket(fd: number): number {
  return required().dupFd(fd);
}

/** Closes a descriptor from `reuseportGroup` or `dupSocket`. */
export function closeSocket(fd: number): void {
  required().closeFd(fd);
}
