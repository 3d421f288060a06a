// A one-client UDP relay for transport tests that must shape traffic precisely: client-to-server
// datagrams can be held for a fixed time (so ACKs reach the server late) and server-to-client
// datagrams dropped by a predicate. Loopback, port 0; close() ends it.
import dgram from 'node:dgram';
import type { AddressInfo } from 'node:net';

export interface UdpShaper {
  /** The port clients dial instead of the server's. */
  readonly port: number;
  readonly counters: { up: number; down: number; droppedDown: number };
  close(): Promise<void>;
}

export interface ShaperOptions {
  /** Client-to-server datagrams leave this many ms after they arrived. */
  upDelayMs: number;
  /** Called for every server-to-client datagram; true drops it. */
  dropDown(datagram: Buffer): boolean;
}

export async function startUdpShaper(target: { host: string; port: number }, o: ShaperOptions): Promise<UdpShaper> {
  const front = dgram.createSocket('udp4');
  const back = dgram.createSocket('udp4');
  const counters = { up: 0, down: 0, droppedDown: 0 };
  const timers = new Set<NodeJS.Timeout>();
  let client: dgram.RemoteInfo | null = null;
  let closed = false;
  front.on('message', (d, from) => {
    client = from;
    counters.up++;
    const t = setTimeout(() => {
      timers.delete(t);
      if (!closed) back.send(d, target.port, target.host);
    }, o.upDelayMs);
    timers.add(t);
  });
  back.on('message', (d) => {
    if (closed || client === null) return;
    if (o.dropDown(d)) {
      counters.droppedDown++;
      return;
    }
    counters.down++;
    front.send(d, client.port, client.address);
  });
  await new Promise<void>((r) => front.bind(0, '127.0.0.1', () => r()));
  await new Promise<void>((r) => back.bind(0, '127.0.0.1', () => r()));
  return {
    get port() {
      return (front.address() as AddressInfo).port;
    },
    counters,
    async close() {
      closed = true;
      for (const t of timers) clearTimeout(t);
      await Promise.all([front, back].map((s) => new Promise<void>((r) => s.close(() => r()))));
    },
  };
}
