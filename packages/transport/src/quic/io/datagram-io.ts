// How an endpoint moves datagrams: the batched native module (`native-io.ts`: recvmmsg,
// sendmmsg, GSO/GRO) or node:dgram (`dgram-io.ts`). Both present the same batch interface, so
// the endpoint and the flusher are written once: a packet is built straight into `nextSlot()`,
// `commit()` queues it, and `flush()` hands everything queued to the kernel (one sendmmsg on the
// native path). Received datagrams reach the sink one by one, with an interned `Peer`; their
// bytes are valid only during the call (the native path reuses its receive buffer).
import type { Peer } from './peer.js';

export type UdpIoKind = 'native' | 'dgram';
/** Which I/O path to use: the native module when it loads ('auto', default), or one forced. */
export type UdpIoMode = 'auto' | UdpIoKind;

export interface UdpIoStats {
  kind: UdpIoKind;
  /** Send system calls (sendmmsg, or one sendmsg per datagram on the dgram path). */
  sendCalls: number;
  /** Receive system calls (recvmmsg; on the dgram path libuv's recvmsg, one per datagram). */
  recvCalls: number;
  /** Sends that carried several datagrams (GSO); always 0 on the dgram path. */
  gsoSends: number;
  gso: boolean;
  gro: boolean;
}

export interface DatagramIo {
  readonly kind: UdpIoKind;
  /** The bound address (its port is the real one after binding port 0). */
  readonly local: Peer;
  /**
   * How many datagrams one readiness event of the socket delivers at most: libuv reads a dgram
   * socket in slices of 32; the native path reads until the socket is drained. The flusher
   * waits a few turns while slices come back full (see flusher.ts).
   */
  readonly readsPerEvent: number;
  /** The buffer the next committed datagram must be written into. */
  nextSlot(): Uint8Array;
  /** The first `len` bytes of `nextSlot()` go to `to` (null: the connected peer). May flush. */
  commit(len: number, to: Peer | null): void;
  /** Hands every committed datagram to the kernel. */
  flush(): void;
  /** One datagram at once, outside a batch (Retry, Version Negotiation, CLOSE repeats). */
  sendOne(data: Uint8Array, len: number, to: Peer | null): void;
  /** The interned peer for an IP literal (quiche's SendInfo.to). */
  peer(host: string, port: number): Peer;
  stats(): UdpIoStats;
  /** Stops delivering datagrams and releases the socket. */
  close(): Promise<void>;
}

export interface DatagramIoOptions {
  /** Local IP literal to bind. */
  host: string;
  port: number;
  /** Adopt this bound socket instead of binding host:port (native path only). */
  fd?: number;
  socketBufferBytes: number;
  /** Connect to this server (client endpoints); sends then carry no address. */
  connectTo: { host: string; port: number } | null;
  /** A datagram arrived (bytes valid during the call only). */
  onDatagram(data: Uint8Array, from: Peer): void;

  /** A socket call failed (ICMP errors such as ECONNREFUSED arrive here). */
  onError(err: NodeJS.ErrnoException): void;
}
