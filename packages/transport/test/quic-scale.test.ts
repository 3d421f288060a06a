// Many sessions at once and many sessions over time: 2,000 concurrent request/response streams
// over 50 QUIC connections, and 20,000 streams opened and closed without leaving anything behind.
import { createHash, randomBytes, randomInt } from 'node:crypto';
import { afterEach, expect, test } from 'vitest';
import type { SessionStream } from '../src/session-stream.js';
import { QuicDialer, QuicListener } from '../src/quic/index.js';
import { devCerts, expectedUdpIo, readAll, waitFor } from './quic-helpers.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Server answers every session with sha256(request) followed by the request reversed. */
function answer(req: Buffer): Buffer {
  return Buffer.concat([createHash('sha256').update(req).digest(), Buffer.from(req).reverse()]);
}

async function start(connections: number): Promise<{ listener: QuicListener; dialer: QuicDialer }> {
  const c = await devCerts();
  const listener = await QuicListener.listen({ cert: c.cert, key: c.key, maxStreamsPerConnection: 100 });
  listener.onSession((s: SessionStream) => {
    s.on('error', () => {});
    void readAll(s).then((req) => s.end(answer(req)), () => {});
  });
  const dialer = new QuicDialer({ host: '127.0.0.1', port: listener.address().port, serverName: 'localhost', ca: c.ca, connections });
  cleanups.push(() => listener.close({ graceful: false }));
  cleanups.push(() => dialer.close({ graceful: false }));
  return { listener, dialer };
}

async function roundTrip(dialer: QuicDialer, size: number): Promise<boolean> {
  const s = await dialer.open();
  const req = randomBytes(size);
  const res = readAll(s);
  s.end(req);
  return (await res).equals(answer(req));
}

test('2,000 concurrent streams over 50 connections all complete with exact payloads', async () => {
  const { listener, dialer } = await start(50);
  // 100 streams per connection granted at a time: 2,000 streams need the credit to be renewed.
  const results = await Promise.all(Array.from({ length: 2000 }, () => roundTrip(dialer, randomInt(1, 4000))));
  expect(results.filter((ok) => ok)).toHaveLength(2000);
  const cs = await dialer.stats();
  expect(cs.connections).toBe(50);
  expect(cs.streams).toBe(0);
  expect(cs.io).toBe(expectedUdpIo());
  expect(listener.stats().io).toBe(expectedUdpIo());
  await waitFor(() => listener.stats().streams === 0, 3000, 'server streams released');
  expect(listener.stats().connections).toBe(50);
}, 30_000);

test('opening and closing 20,000 streams leaves no stream behind and bounded RSS', async () => {
  const { listener, dialer } = await start(2);
  // Warm up so the baseline includes the JIT and the endpoint's fixed buffers.
  await Promise.all(Array.from({ length: 500 }, () => roundTrip(dialer, 200)));
  const rssBefore = process.memoryUsage().rss;
  let ok = 0;
  const total = 20_000;
  const concurrency = 400;
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < total) {
      next++;
      if (await roundTrip(dialer, randomInt(1, 400))) ok++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  expect(ok).toBe(total);
  expect((await dialer.stats()).streams).toBe(0);
  expect((await dialer.stats()).io).toBe(expectedUdpIo());
  await waitFor(() => listener.stats().streams === 0, 3000, 'server streams released');
  const growthMb = (process.memoryUsage().rss - rssBefore) / 1024 / 1024;
  // Client and server run in this one process; a leak of even 2 KB per stream would show as 40 MB.
  expect(growthMb).toBeLessThan(40);
}, 60_000);
