// A batched UDP socket: datagrams arrive in batches (one call per recvmmsg) described by an
// Int32Array, and leave in batches (one call per sendmmsg) from preallocated send slots. Nothing
// is allocated per datagram: the caller writes packets straight into `txSlot(i)` views and reads
// received ones through `rxView(i)`, whose views are reused while offsets and lengths repeat.
import { isIPv6 } from 'node:net';
import { getSystemErrorName } from 'node:util';
import { META_INTS, Meta, loadUdpBinding } from './binding.js';
import type { RawSocket, UdpBinding, UdpSocketInfo, UdpStats } from './binding.js';

/** A peer in the form the native module speaks: family, port and address words. */
export interface UdpAddress {
  readonly family: 4 | 6;
  readonly port: number;
  /** IPv4: the address in w0 (host order); IPv6: four host-order words. */
  readonly w0: number;
  readonly w1: number;
  readonly w2: number;
  readonly w3: number;
}

export interface BatchedUdpOptions {
  /** IP literal to bind ('0.0.0.0', '::', '127.0.0.1' ...); with `fd`, the socket's own address family. */
  address: string;
  port?: number;
  /**
   * Adopt a dup() of this bound UDP socket (a member of a `reuseportGroup`) instead of making and
   * binding one; closing this socket closes only the dup.
   */
  fd?: number;
  /** Connect the socket to one peer (a client): sends then need no address. */
  connect?: { address: string; port: number };
  /** Kernel buffers (SO_RCVBUF/SO_SNDBUF; beyond rmem_max/wmem_max when root). Default 4 MiB. */
  recvBufferBytes?: number;
  sendBufferBytes?: number;
  /** Use UDP GSO for runs of equal-size datagrams to one peer when the kernel has it. Default true. */
  gso?: boolean;
  /** Let the kernel coalesce received runs (UDP GRO) when it has it. Default true. */
  gro?: boolean;
  /** Datagrams one `send()` can carry. Default 1,024. */
  txSlots?: number;
  /** Bytes of each send slot (the largest datagram). Default 1,500. */
  txSlotBytes?: number;
  /** A batch has arrived: entries [0, count) of `rxMeta`, valid until this call returns. */
  onDatagrams(socket: BatchedUdpSocket, count: number): void;
  /** A socket call failed (ECONNREFUSED from ICMP, ...). Datagram-level errors are also counted in stats(). */
  onError(err: NodeJS.ErrnoException): void;
}

/** Messages per recvmmsg call: 16 x 64 KiB slots with GRO (a slot may hold a coalesced run), else 64 x 2 KiB. */
const GRO_SLOTS = 16;
const GRO_SLOT_BYTES = 65536;
const PLAIN_SLOTS = 64;
const PLAIN_SLOT_BYTES = 2048;
const MAX_SEGMENTS = 64;

export class BatchedUdpSocket {
  readonly rxMeta: Int32Array;
  readonly rxBytes: Uint8Array;
  readonly txMeta: Int32Array;
  readonly txCapacity: number;
  readonly connected: boolean;
  readonly family: 4 | 6;
  private readonly raw: RawSocket;
  private readonly txViews: Uint8Array[] = [];
  private readonly rxViews: Array<Uint8Array | undefined> = [];
  private closed = false;

  private constructor(binding: UdpBinding, o: BatchedUdpOptions) {
    this.family = isIPv6(o.address) ? 6 : 4;
    this.connected = o.connect !== undefined;
    const gro = o.gro ?? true;
    const rxSlots = gro ? GRO_SLOTS : PLAIN_SLOTS;
    const rxSlotBytes = gro ? GRO_SLOT_BYTES : PLAIN_SLOT_BYTES;
    const rxBuffer = new ArrayBuffer(rxSlots * rxSlotBytes);
    this.rxBytes = new Uint8Array(rxBuffer);
    this.rxMeta = new Int32Array(rxSlots * MAX_SEGMENTS * META_INTS);
    this.txCapacity = o.txSlots ?? 1024;
    const slotBytes = o.txSlotBytes ?? 1500;
    const txBuffer = new ArrayBuffer(this.txCapacity * slotBytes);
    this.txMeta = new Int32Array(this.txCapacity * META_INTS);
    for (let i = 0; i < this.txCapacity; i++) {
      this.txViews.push(new Uint8Array(txBuffer, i * slotBytes, slotBytes));
      this.txMeta[i * META_INTS + Meta.Offset] = i * slotBytes;
    }
    const onDatagrams = o.onDatagrams;
    const onError = o.onError;
    this.raw = new binding.UdpSocket({
      family: this.family,
      address: o.address,
      port: o.port ?? 0,
      ...(o.fd !== undefined ? { fd: o.fd } : {}),
      ...(o.connect !== undefined ? { connectAddress: o.connect.address, connectPort: o.connect.port } : {}),
      recvBufferBytes: o.recvBufferBytes ?? 4 * 1024 * 1024,
      sendBufferBytes: o.sendBufferBytes ?? 4 * 1024 * 1024,
      gso: o.gso ?? true,
      gro,
      rxBuffer,
      rxSlots,
      rxSlotBytes,
      rxMeta: this.rxMeta,
      txBuffer,
      txMeta: this.txMeta,
      onDatagrams: (count: number) => onDatagrams(this, count),
      onError: (errno: number, syscall: string) => onError(errnoException(errno, syscall)),
    });
  }

  /** Opens a socket, or throws (bind/connect errors as ErrnoExceptions; no module: an Error saying why). */
  static open(options: BatchedUdpOptions): BatchedUdpSocket {
    const status = loadUdpBinding();
    if (!status.available) throw new Error(`native UDP module unavailable: ${status.reason}`);
    try {
      return new BatchedUdpSocket(status.binding, options);
    } catch (err) {
      const errno = (err as { errno?: unknown }).errno;
      if (typeof errno === 'number') throw errnoException(errno, (err as Error).message.split(':')[0] ?? 'socket');
      throw err;
    }
  }

  // --- receiving -------------------------------------------------------------------------------

  /** Length of received datagram `i` of the current batch. */
  rxLength(i: number): number {
    return this.rxMeta[i * META_INTS + Meta.Length]!;
  }

  /** The bytes of received datagram `i`: a view into the receive buffer, valid during `onDatagrams`. */
  rxView(i: number): Uint8Array {
    const base = i * META_INTS;
    const off = this.rxMeta[base + Meta.Offset]!;
    const len = this.rxMeta[base + Meta.Length]!;
    const v = this.rxViews[i];
    if (v !== undefined && v.byteOffset === off && v.length === len) return v;
    const fresh = new Uint8Array(this.rxBytes.buffer, off, len);
    this.rxViews[i] = fresh;
    return fresh;
  }

  /** Whether datagram `i` came from `a` (no allocation). */
  rxFrom(i: number, a: UdpAddress): boolean {
    const m = this.rxMeta;
    const b = i * META_INTS;
    return m[b + Meta.Port] === a.port && m[b + Meta.Address] === a.w0 && m[b + Meta.Family] === a.family &&
      (a.family === 4 || (m[b + Meta.Address + 1] === a.w1 && m[b + Meta.Address + 2] === a.w2 && m[b + Meta.Address + 3] === a.w3));
  }

  /** The sender of datagram `i` (allocates: for new peers only). */
  rxAddress(i: number): UdpAddress & { host: string } {
    const m = this.rxMeta;
    const b = i * META_INTS;
    const family = m[b + Meta.Family] === 6 ? 6 : 4;
    const w0 = m[b + Meta.Address]!;
    const w1 = m[b + Meta.Address + 1]!;
    const w2 = m[b + Meta.Address + 2]!;
    const w3 = m[b + Meta.Address + 3]!;
    const host = loadedBinding().formatAddress(family, w0, w1, w2, w3);
    return { family, port: m[b + Meta.Port]!, w0, w1, w2, w3, host };
  }

  // --- sending ---------------------------------------------------------------------------------

  /** The send slot `i` (write a datagram into it, then `setTx`). */
  txSlot(i: number): Uint8Array {
    return this.txViews[i]!;
  }

  /** Slot `i` holds a datagram of `len` bytes for `to` (ignored, and may be null, when connected). */
  setTx(i: number, len: number, to: UdpAddress | null): void {
    const m = this.txMeta;
    const b = i * META_INTS;
    m[b + Meta.Length] = len;
    if (to === null) {
      m[b + Meta.Family] = 0;
      return;
    }
    m[b + Meta.Family] = to.family;
    m[b + Meta.Port] = to.port;
    m[b + Meta.Address] = to.w0;
    m[b + Meta.Address + 1] = to.w1;
    m[b + Meta.Address + 2] = to.w2;
    m[b + Meta.Address + 3] = to.w3;
  }

  /**
   * Sends slots [0, count) in one sendmmsg (GSO for equal-size runs to one peer). What the kernel
   * cannot take now is copied aside and sent when the socket is writable; slots are free again at
   * once. A failed datagram is counted and reported through `onError`, never thrown.
   */
  send(count: number): number {
    if (count === 0 || this.closed) return 0;
    return this.raw.send(count);
  }

  // --- the rest --------------------------------------------------------------------------------

  info(): UdpSocketInfo {
    return this.raw.info();
  }

  stats(): UdpStats {
    return this.raw.stats();
  }

  /** Whether this socket keeps the event loop alive (like dgram's ref/unref). */
  ref(on = true): void {
    if (!this.closed) this.raw.ref(on);
  }

  /** Stops receiving and closes the descriptor at once. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.raw.close();
  }

  get isClosed(): boolean {
    return this.closed;
  }
}

function loadedBinding(): UdpBinding {
  const s = loadUdpBinding();
  if (!s.available) throw new Error(s.reason);
  return s.binding;
}

/** A peer address in the module's form, from an IP literal; null when `host` is not one. */
export function udpAddress(host: string, port: number): (UdpAddress & { host: string }) | null {
  const out = new Int32Array(5);
  if (!loadedBinding().parseAddress(host, out)) return null;
  return { family: out[0] === 6 ? 6 : 4, port, w0: out[1]!, w1: out[2]!, w2: out[3]!, w3: out[4]!, host };
}

export function errnoException(errno: number, syscall: string): NodeJS.ErrnoException {
  let code = 'EIO';
  try {
    code = getSystemErrorName(errno);
  } catch {
    // not a known errno
  }
  return Object.assign(new Error(`${syscall} ${code}`), { errno, code, syscall });
}

export type { UdpSocketInfo, UdpStats } from './binding.js';
