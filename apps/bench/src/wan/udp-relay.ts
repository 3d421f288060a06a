// UDP side of the WAN emulator: one upstream socket per client address, so the target sees as
// many distinct peers as there are clients (a QUIC server routes and validates by address).
// Datagrams go through the shared delay lines; each direction drops at random with its loss rate.
// Upstream sockets idle for `idleMs` are closed by a periodic sweep.
import dgram from 'node:dgram';
import type { AddressInfo } from 'node:net';
import type { Sink } from './delay-line.js';

/** A datagram on its way: `send` is bound to the socket and address it must leave from/to. */
export interface UdpDatagram {
  data: Buffer;
  send: (data: Buffer) => void;
}

export function deliverUdp(datagram: UdpDatagram): void {
  datagram.send(datagram.data);
}

/** 4 MB socket buffers: the 208 KB default drops bursts at thousands of QUIC streams (TOOLCHAIN). */
const SOCKET_BUFFER = 4 * 1024 * 1024;

interface Peer {
  upstream: dgram.Socket;
  lastSeen: number;
  toClient: (data: Buffer) => void;
  toTarget: (data: Buffer) => void;
}

export interface UdpRelayOptions {
  target: { host: string; port: number };
  up: Sink<UdpDatagram>;
  down: Sink<UdpDatagram>;
  lossUp: () => boolean;
  lossDown: () => boolean;
  idleMs: number;
  maxPeers: number;
}

export interface UdpRelay {
  socket: dgram.Socket;
  peers(): number;
  counters: { lostUp: number; lostDown: number; peersRefused: number; peersExpired: number };
  close(): Promise<void>;
}

export async function createUdpRelay(host: string, port: number, options: UdpRelayOptions): Promise<UdpRelay> {
  const family = host.includes(':') ? 'udp6' : 'udp4';
  const socket = dgram.createSocket({ type: family, recvBufferSize: SOCKET_BUFFER, sendBufferSize: SOCKET_BUFFER });
  const peers = new Map<string, Peer>();
  const counters = { lostUp: 0, lostDown: 0, peersRefused: 0, peersExpired: 0 };
  let closed = false;

  const openPeer = (address: string, clientPort: number): Peer | null => {
    if (peers.size >= options.maxPeers) {
      counters.peersRefused++;
      return null;
    }
    const upstream = dgram.createSocket({ type: family, recvBufferSize: SOCKET_BUFFER, sendBufferSize: SOCKET_BUFFER });
    const peer: Peer = {
      upstream,
      lastSeen: Date.now(),
      toClient: (data) => {
        if (!closed) socket.send(data, clientPort, address);
      },
      toTarget: (data) => {
        if (!closed && peers.get(key(address, clientPort)) === peer) upstream.send(data, options.target.port, options.target.host);
      },
    };
    upstream.on('message', (data) => {
      peer.lastSeen = Date.now();
      if (options.lossDown()) counters.lostDown++;
      else options.down.push({ data, send: peer.toClient }, data.length);
    });
    // ICMP port unreachable and the like: a WAN would lose the datagram silently, so do we.
    upstream.on('error', () => {});
    upstream.bind(0, family === 'udp6' ? '::' : '0.0.0.0');
    peers.set(key(address, clientPort), peer);
    return peer;
  };

  socket.on('message', (data, rinfo) => {
    const peer = peers.get(key(rinfo.address, rinfo.port)) ?? openPeer(rinfo.address, rinfo.port);
    if (peer === null) return;
    peer.lastSeen = Date.now();
    if (options.lossUp()) counters.lostUp++;
    else options.up.push({ data, send: peer.toTarget }, data.length);
  });
  socket.on('error', () => {});

  const sweep = setInterval(() => {
    const cutoff = Date.now() - options.idleMs;
    for (const [name, peer] of peers) {
      if (peer.lastSeen < cutoff) {
        peers.delete(name);
        peer.upstream.close();
        counters.peersExpired++;
      }
    }
  }, Math.max(100, Math.min(options.idleMs / 2, 5_000)));
  sweep.unref();

  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(port, host, () => {
      socket.off('error', reject);
      resolve();
    });
  });

  return {
    socket,
    peers: () => peers.size,
    counters,
    close: async () => {
      closed = true;
      clearInterval(sweep);
      const closing = [...peers.values()].map((peer) => new Promise<void>((resolve) => peer.upstream.close(() => resolve())));
      peers.clear();
      closing.push(new Promise<void>((resolve) => socket.close(() => resolve())));
      await Promise.all(closing);
    },
  };
}

export function boundPort(socket: dgram.Socket): number {
  return (socket.address() as AddressInfo).port;
}

function key(address: string, port: number): string {
  return `${address}|${port}`;
}
