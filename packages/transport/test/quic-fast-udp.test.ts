// The direct UDP-handle path (src/quic/routing/fast-udp.ts) against real sockets, and the endpoint
// over the public dgram API (its fallback) carrying the same traffic.
import dgram from 'node:dgram';
import { once } from 'node:events';
import { afterEach, expect, test } from 'vitest';
import { fastUdp } from '../src/quic/routing/fast-udp.js';
import { QuicDialer, QuicListener } from '../src/quic/index.js';
import { devCerts, readAll } from './quic-helpers.js';

const sockets: dgram.Socket[] = [];
afterEach(() => {
  for (const s of sockets.splice(0)) s.close();
});

function bound(): Promise<dgram.Socket> {
  return new Promise((resolve) => {
    const s = dgram.createSocket('udp4');
    sockets.push(s);
    s.bind(0, '127.0.0.1', () => resolve(s));
  });
}

test('on Node 20 the direct path exists and moves datagrams both ways, connected and not', async () => {
  const a = await bound();
  const b = await bound();
  const fa = fastUdp(a, false);
  expect(Number(process.versions.node.split('.')[0])).toBeGreaterThanOrEqual(20);
  expect(fa).not.toBeNull();
  const got: Array<{ text: string; port: number }> = [];
  fa!.takeReceive((msg, rinfo) => got.push({ text: msg.toString(), port: rinfo.port }));

  // Unconnected send from `a` (address per datagram): only the first `len` bytes leave.
  const buf = Buffer.alloc(1500, 0x20);
  buf.write('to b, unconnected');
  const arrived = once(b, 'message');
  fa!.send(buf, 17, b.address().port, '127.0.0.1');
  const [msg, rinfo] = (await arrived) as [Buffer, dgram.RemoteInfo];
  expect(msg.toString()).toBe('to b, unconnected');
  expect(rinfo.port).toBe(a.address().port);

  // Connected send from `b`, received through `a`'s taken-over handle callback.
  await new Promise<void>((r) => b.connect(a.address().port, '127.0.0.1', () => r()));
  const fb = fastUdp(b, true);
  expect(fb).not.toBeNull();
  for (let i = 0; i < 100; i++) {
    const m = Buffer.from(`datagram ${i}`);
    fb!.send(m, m.length, 0, '');
  }
  const t0 = Date.now();
  while (got.length < 100 && Date.now() - t0 < 2000) await new Promise((r) => setTimeout(r, 5));
  expect(got.map((g) => g.text)).toEqual(Array.from({ length: 100 }, (_, i) => `datagram ${i}`));
  expect(new Set(got.map((g) => g.port))).toEqual(new Set([b.address().port]));
});

test('the endpoint on the dgram path over the public dgram API (QUICPOOL_DGRAM_API=1) carries the same traffic', async () => {
  const c = await devCerts();
  process.env.QUICPOOL_DGRAM_API = '1';
  let listener: QuicListener | null = null;
  let dialer: QuicDialer | null = null;
  try {
    listener = await QuicListener.listen({ cert: c.cert, key: c.key, udpIo: 'dgram' });
    listener.onSession((s) => s.pipe(s));
    dialer = new QuicDialer({ host: '127.0.0.1', port: listener.address().port, serverName: 'localhost', ca: c.ca, udpIo: 'dgram' });
    const replies = await Promise.all(Array.from({ length: 20 }, async (_, i) => {
      const s = await dialer!.open();
      const r = readAll(s);
      s.end(`over dgram ${i}`);
      return (await r).toString();
    }));
    expect(replies).toEqual(Array.from({ length: 20 }, (_, i) => `over dgram ${i}`));
    expect(listener.stats().datagramsIn).toBeGreaterThan(0);
    expect(listener.stats().io).toBe('dgram');
    expect((await dialer.stats()).io).toBe('dgram');
  } finally {
    delete process.env.QUICPOOL_DGRAM_API;
    await dialer?.close({ graceful: false });
    await listener?.close({ graceful: false });
  }
});
