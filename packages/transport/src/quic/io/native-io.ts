// The batched path: @quicpool/udp's native socket. Packets are built by quiche straight into the
// module's send slots and leave in one sendmmsg per flush (equal-size runs to one peer as one
// GSO send); datagrams arrive in batches of a recvmmsg call each and are handed over as views
// into the module's receive buffer. Nothing is allocated per datagram.
import { BatchedUdpSocket, udpAddress } from '@quicpool/udp';
import type { DatagramIo, DatagramIoOptions, UdpIoStats } from './datagram-io.js';
import { PeerTable } from './peer.js';
import type { Peer } from './peer.js';

export class NativeIo implements DatagramIo {
  readonly kind = 'native' as const;
  readonly readsPerEvent = Infinity;
  readonly local: Peer;
  private readonly socket: BatchedUdpSocket;
  private readonly peers = new PeerTable();
  private count = 0;
  private readonly capacity: number;
  /** The sender of the previous datagram: most datagrams of a batch come from the same peer. */
  private lastPeer: Peer | null = null;

  constructor(o: DatagramIoOptions) {
    const sink = o.onDatagram;
    this.socket = BatchedUdpSocket.open({
      address: o.host,
      port: o.port,
      ...(o.fd !== undefined ? { fd: o.fd } : {}),
      recvBufferBytes: o.socketBufferBytes,
      sendBufferBytes: o.socketBufferBytes,
      ...(o.connectTo !== null ? { connect: { address: o.connectTo.host, port: o.connectTo.port } } : {}),
      onDatagrams: (s, n) => {
        for (let i = 0; i < n; i++) sink(s.rxView(i), this.sender(s, i));
      },
      onError: o.onError,
    });
    this.capacity = this.socket.txCapacity;
    const info = this.socket.info();
    this.local = this.peer(info.address ?? o.host, info.port ?? o.port);
  }

  private sender(s: BatchedUdpSocket, i: number): Peer {
    const last = this.lastPeer;
    if (last !== null && s.rxFrom(i, last)) return last;
    const m = s.rxMeta;
    const b = i * 8;
    const p = this.peers.fromWords(m[b + 2] === 6 ? 6 : 4, m[b + 3]!, m[b + 4]!, m[b + 5]!, m[b + 6]!, m[b + 7]!, () => s.rxAddress(i).host);
    this.lastPeer = p;
    return p;
  }

  nextSlot(): Uint8Array {
    return this.socket.txSlot(this.count);
  }

  commit(len: number, to: Peer | null): void {
    this.socket.setTx(this.count, len, this.socket.connected ? null : to);
    if (++this.count === this.capacity) this.flush();
  }

  flush(): void {
    const n = this.count;
    if (n === 0) return;
    this.count = 0;
    this.socket.send(n);
  }

  sendOne(data: Uint8Array, len: number, to: Peer | null): void {
    this.nextSlot().set(data.subarray(0, len));
    this.commit(len, to);
    this.flush();
  }

  peer(host: string, port: number): Peer {
    return this.peers.fromText(host, port, (h) => {
      const a = udpAddress(h, port);
      if (a === null) throw new TypeError(`not an IP address: ${h}`);
      return { family: a.family, w0: a.w0, w1: a.w1, w2: a.w2, w3: a.w3 };
    });
  }

  stats(): UdpIoStats {
    const s = this.socket.stats();
    const info = this.socket.info();
    return { kind: 'native', sendCalls: s.sendCalls, recvCalls: s.recvCalls, gsoSends: s.gsoSends, gso: info.gso, gro: info.gro };
  }

  close(): Promise<void> {
    this.flush();
    this.socket.close();
    return Promise.resolve();
  }
}
