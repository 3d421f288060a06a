// The fallback path: node:dgram, one datagram per system call, through the socket's UDP handle
// directly when Node allows it (`../routing/fast-udp.ts`). Packets are built into a ring of
// preallocated buffers: a send that meets a full kernel buffer completes later and still reads
// its buffer, so a buffer is reused only after RING_SIZE others.
import type dgram from 'node:dgram';
import { isIPv6 } from 'node:net';
import { fastUdp } from '../routing/fast-udp.js';
import type { DatagramSend } from '../routing/fast-udp.js';
import { closeSocket, openSocket } from '../routing/udp.js';
import type { DatagramIo, DatagramIoOptions, UdpIoStats } from './datagram-io.js';
import { PeerTable } from './peer.js';
import type { Peer } from './peer.js';

const RING_SIZE = 1024;
const MAX_PACKET = 1500;
/** libuv reads at most 32 datagrams per readiness event of a UDP socket (`uv__udp_recvmsg`). */
const UV_UDP_READS_PER_EVENT = 32;

const noWords = (host: string): Omit<Peer, 'host' | 'port'> => ({ family: isIPv6(host) ? 6 : 4, w0: 0, w1: 0, w2: 0, w3: 0 });

export class DgramIo implements DatagramIo {
  readonly kind = 'dgram' as const;
  readonly readsPerEvent = UV_UDP_READS_PER_EVENT;
  readonly local: Peer;
  private readonly ring: Buffer[] = [];
  private ringIdx = 0;
  /** Committed datagrams not yet sent: ring positions [first, first + count). */
  private first = 0;
  private count = 0;
  private readonly lens = new Int32Array(RING_SIZE);
  private readonly tos: Array<Peer | null> = new Array<Peer | null>(RING_SIZE).fill(null);
  private readonly peers = new PeerTable();
  private sendDatagram: DatagramSend;
  private sends = 0;
  private receives = 0;
  private closing = false;

  private constructor(private readonly socket: dgram.Socket, o: DatagramIoOptions) {
    for (let i = 0; i < RING_SIZE; i++) this.ring.push(Buffer.allocUnsafeSlow(MAX_PACKET));
    const a = socket.address();
    this.local = this.peer(a.address, a.port);
    const connected = o.connectTo !== null;
    const onMessage = (msg: Buffer, rinfo: dgram.RemoteInfo): void => {
      if (this.closing) return;
      this.receives++;
      o.onDatagram(msg, this.peer(rinfo.address, rinfo.port));
    };
    const fast = fastUdp(socket, connected);
    if (fast !== null) {
      fast.takeReceive(onMessage);
      this.sendDatagram = fast.send;
    } else {
      socket.on('message', onMessage);
      this.sendDatagram = connected
        ? (buf, len) => socket.send(buf, 0, len)
        : (buf, len, port, host) => socket.send(buf, 0, len, port, host);
    }
    socket.on('error', o.onError);
  }

  static async open(o: DatagramIoOptions): Promise<DgramIo> {
    // A reuseport group member is made by the native module, so only its path adopts one.
    if (o.fd !== undefined) throw new Error('adopting a socket (socketFd) needs the native UDP module');
    const socket = await openSocket(o.host, o.port, o.socketBufferBytes, o.connectTo);
    return new DgramIo(socket, o);
  }

  nextSlot(): Buffer {
    return this.ring[this.ringIdx]!;
  }

  commit(len: number, to: Peer | null): void {
    if (this.count === 0) this.first = this.ringIdx;
    this.lens[this.ringIdx] = len;
    this.tos[this.ringIdx] = to;
    this.ringIdx = this.ringIdx + 1 === RING_SIZE ? 0 : this.ringIdx + 1;
    // Never let the ring wrap onto datagrams not yet sent.
    if (++this.count === RING_SIZE) this.flush();
  }

  flush(): void {
    let idx = this.first;
    for (let n = this.count; n > 0; n--) {
      const to = this.tos[idx];
      if (!this.closing) this.sendDatagram(this.ring[idx]!, this.lens[idx]!, to?.port ?? 0, to?.host ?? '');
      this.sends++;
      this.tos[idx] = null;
      idx = idx + 1 === RING_SIZE ? 0 : idx + 1;
    }
    this.count = 0;
  }

  sendOne(data: Uint8Array, len: number, to: Peer | null): void {
    this.nextSlot().set(data.subarray(0, len));
    this.commit(len, to);
    this.flush();
  }

  peer(host: string, port: number): Peer {
    return this.peers.fromText(host, port, noWords);
  }

  stats(): UdpIoStats {
    return { kind: 'dgram', sendCalls: this.sends, recvCalls: this.receives, gsoSends: 0, gso: false, gro: false };
  }

  async close(): Promise<void> {
    this.flush();
    this.closing = true;
    this.socket.removeAllListeners('message');
    // Sends are synchronous with our lookup; one turn more lets a send that met a full kernel
    // buffer (the CONNECTION_CLOSE frames) complete before the handle goes away.
    await new Promise((r) => setImmediate(r));
    await closeSocket(this.socket);
  }
}
