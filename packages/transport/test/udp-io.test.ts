// Choosing the I/O path (src/quic/io/): on this machine 'auto' takes the native batched module;
// either path can be forced by option or by QUICPOOL_UDP_IO, and the two interoperate. (The whole
// QUIC suite also runs over node:dgram in the transport-dgram project; see vitest.config.ts.)
import { afterEach, expect, test } from 'vitest';
import type { UdpIoMode } from '../src/index.js';
import { QuicDialer, QuicListener, udpIoStatus } from '../src/index.js';
import { devCerts, readAll } from './quic-helpers.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  delete process.env.QUICPOOL_UDP_IO;
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function pair(server: UdpIoMode, client: UdpIoMode): Promise<{ listener: QuicListener; dialer: QuicDialer }> {
  const c = await devCerts();
  const listener = await QuicListener.listen({ cert: c.cert, key: c.key, udpIo: server });
  listener.onSession((s) => s.pipe(s));
  const dialer = new QuicDialer({ host: '127.0.0.1', port: listener.address().port, serverName: 'localhost', ca: c.ca, udpIo: client, connections: 1 });
  cleanups.push(() => listener.close({ graceful: false }));
  cleanups.push(() => dialer.close({ graceful: false }));
  return { listener, dialer };
}

async function echo(dialer: QuicDialer, n: number): Promise<string[]> {
  return Promise.all(Array.from({ length: n }, async (_, i) => {
    const s = await dialer.open();
    const r = readAll(s);
    s.end(`message ${i}`);
    return (await r).toString();
  }));
}

test("'auto' takes the native module here (Linux, built by the test command)", async () => {
  expect(udpIoStatus()).toEqual({ kind: 'native', reason: null });
  const { listener, dialer } = await pair('auto', 'auto');
  expect(await echo(dialer, 10)).toEqual(Array.from({ length: 10 }, (_, i) => `message ${i}`));
  expect(listener.stats().io).toBe('native');
  expect((await dialer.stats()).io).toBe('native');
});

test.each([
  ['native', 'dgram'],
  ['dgram', 'native'],
  ['dgram', 'dgram'],
] as const)('a %s server and a %s client interoperate', async (server, client) => {
  const { listener, dialer } = await pair(server, client);
  expect(await echo(dialer, 40)).toEqual(Array.from({ length: 40 }, (_, i) => `message ${i}`));
  expect(listener.stats().io).toBe(server);
  expect((await dialer.stats()).io).toBe(client);
});

test('QUICPOOL_UDP_IO overrides the option; an unknown value is refused', async () => {
  process.env.QUICPOOL_UDP_IO = 'dgram';
  const { listener, dialer } = await pair('native', 'native');
  await echo(dialer, 2);
  expect(listener.stats().io).toBe('dgram');
  expect((await dialer.stats()).io).toBe('dgram');
  process.env.QUICPOOL_UDP_IO = 'fast';
  const c = await devCerts();
  await expect(QuicListener.listen({ cert: c.cert, key: c.key })).rejects.toThrow(/QUICPOOL_UDP_IO must be auto, native or dgram/);
});

test('the native path batches: many streams of a turn leave in few sendmmsg calls, equal sizes as GSO sends', async () => {
  const { listener, dialer } = await pair('native', 'native');
  await echo(dialer, 1); // handshake done
  const before = await dialer.stats();
  const sBefore = listener.stats();
  await echo(dialer, 200);
  const after = await dialer.stats();
  const sAfter = listener.stats();
  const datagrams = after.datagramsOut - before.datagramsOut + sAfter.datagramsOut - sBefore.datagramsOut;
  const sends = after.sendCalls - before.sendCalls + sAfter.sendCalls - sBefore.sendCalls;
  expect(datagrams).toBeGreaterThan(400);
  expect(sends).toBeLessThan(datagrams / 4);
  expect(sAfter.gsoSends - sBefore.gsoSends + after.gsoSends - before.gsoSends).toBeGreaterThan(0);
});
