// A tiny UDP relay for fault tests: one upstream socket per client address (the server sees
// distinct peers), a seeded random loss per direction, and a switch that drops everything (the
// peer "vanishes": no close, no reset, just silence). Loopback only, port 0.
import dgram from 'node:dgram';
import type { AddressInfo } from 'node:net';
import { seededRandom } from './seeded-random.js';

export interface UdpFaultRelay {
  readonly port: number;
  /** Drop every datagram in both directions from now on (true) or relay again (false). */
  blackhole: boolean;
  readonly counters: { relayed: number; dropped: number };
  close(): Promise<void>;
}

export async function startUdpFaultRelay(target: { host: string; port: number }, o: { loss?: number; seed?: number } = {}): Promise<UdpFaultRelay> {
  const loss = o.loss ?? 0;
  const random = seededRandom(o.seed ?? 1);
  const socket = dgram.createSocket({ type: 'udp4', recvBufferSize: 4 << 20, sendBufferSize: 4 << 20 });
  const upstreams = new Map<string, dgram.Socket>();
  const counters = { relayed: 0, dropped: 0 };
  let closed = false;
  const relay: UdpFaultRelay = {
    get port() {
      return (socket.address() as AddressInfo).port;
    },
    blackhole: false,
    counters,
    close: async () => {
      closed = true;
      await Promise.all([...upstreams.values(), socket].map((s) => new Promise<void>((r) => s.close(() => r()))));
      upstreams.clear();
    },
  };
  const drop = (): boolean => {
    if (relay.blackhole || (loss > 0 && random() < loss)) {
      counters.dropped++;
      return true;
    }
    counters.relayed++;
    return false;
  };
  socket.on('message', (data, from) => {
    if (closed) return;
    const key = `${from.address}:${from.port}`;
    let up = upstreams.get(key);
    if (up === undefined) {
      const u = dgram.createSocket({ type: 'udp4', recvBufferSize: 4 << 20, sendBufferSize: 4 << 20 });
      u.on('message', (back) => {
        if (!closed && !drop()) socket.send(back, from.port, from.address);
      });
      u.on('error', () => undefined);
      u.bind(0, '127.0.0.1');
      upstreams.set(key, u);
      up = u;
    }
    if (!drop()) up.send(data, target.port, target.host);
  });
  socket.on('error', () => undefined);
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
  return relay;
}
