// A QUIC client that wants more streams than the server grants: streams past the limit are never
// granted (open() waits; the server never holds more than maxStreamsPerConnection), a finished
// stream returns its credit to the next waiter in order, and nothing crashes. Connections past
// maxConnections are not accepted while the existing ones keep working. (A peer that sends a
// STREAM frame beyond MAX_STREAMS anyway is closed by quiche with STREAM_LIMIT_ERROR, RFC 9000
// section 4.6; no compliant stack, ours included, can produce one.)
import { afterEach, describe, expect, test } from 'vitest';
import type { SessionStream } from '../src/session-stream.js';
import { QuicDialer, QuicListener } from '../src/quic/index.js';
import type { QuicSessionStream } from '../src/quic/index.js';
import { devCerts, readN } from './quic-helpers.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Echoes every byte; ends its side when the client ends. */
async function echoListener(opts: { maxStreamsPerConnection?: number; maxConnections?: number }): Promise<QuicListener> {
  const c = await devCerts();
  const listener = await QuicListener.listen({ cert: c.cert, key: c.key, ...opts });
  listener.onSession((s: SessionStream) => {
    s.on('error', () => undefined);
    s.on('data', (d: Buffer) => s.write(d));
    s.on('end', () => s.end());
  });
  cleanups.push(() => listener.close({ graceful: false }));
  return listener;
}

async function dialer(port: number, extra: { idleTimeoutMs?: number } = {}): Promise<QuicDialer> {
  const c = await devCerts();
  const d = new QuicDialer({ host: '127.0.0.1', port, serverName: 'localhost', ca: c.ca, ...extra });
  cleanups.push(() => d.close({ graceful: false }));
  return d;
}

async function echoes(s: QuicSessionStream, text: string): Promise<boolean> {
  s.write(text);
  return (await readN(s, text.length)).toString() === text;
}

const settled = <T>(p: Promise<T>): { done: () => boolean } => {
  let done = false;
  p.then(
    () => (done = true),
    () => (done = true),
  );
  return { done: () => done };
};

describe('QUIC streams past the limit', () => {
  test('are never granted: open() waits, the server holds at most the limit, credit returns in order', async () => {
    const LIMIT = 4;
    const listener = await echoListener({ maxStreamsPerConnection: LIMIT });
    const d = await dialer(listener.address().port);
    const open: QuicSessionStream[] = [];
    for (let i = 0; i < LIMIT; i++) {
      const s = await d.open();
      s.on('error', () => undefined);
      expect(await echoes(s, `s${i}`)).toBe(true);
      open.push(s);
    }
    // 50 more opens on the only connection: none is granted.
    const extra = Array.from({ length: 50 }, () => d.open());
    const states = extra.map(settled);
    await new Promise((r) => setTimeout(r, 500));
    expect(states.some((s) => s.done())).toBe(false);
    expect(listener.stats().streams).toBe(LIMIT);
    expect(listener.stats().connections).toBe(1);
    // One stream finishes: exactly one waiter (the first) gets its credit and works.
    open[0]!.end();
    const first = await extra[0]!;
    first.on('error', () => undefined);
    expect(await echoes(first, 'granted')).toBe(true);
    await new Promise((r) => setTimeout(r, 200));
    expect(states.slice(1).some((s) => s.done())).toBe(false);
    expect(listener.stats().streams).toBeLessThanOrEqual(LIMIT);
    // Finishing the rest lets the waiters through, LIMIT at a time, without a crash.
    for (const s of [...open.slice(1), first]) s.end();
    let served = 1;
    for (const p of extra.slice(1)) {
      const s = await p;
      s.on('error', () => undefined);
      expect(await echoes(s, 'x')).toBe(true);
      expect(listener.stats().streams).toBeLessThanOrEqual(LIMIT);
      s.end();
      served++;
    }
    expect(served).toBe(50);
  });

  test('connections past maxConnections are not accepted; the accepted ones keep working', async () => {
    const listener = await echoListener({ maxConnections: 2 });
    const port = listener.address().port;
    const ok = [await dialer(port), await dialer(port)];
    const streams = [];
    for (const d of ok) {
      const s = await d.open();
      s.on('error', () => undefined);
      expect(await echoes(s, 'hi')).toBe(true);
      streams.push(s);
    }
    const refused = await dialer(port, { idleTimeoutMs: 1000 });
    const attempt = refused.open().then(
      async (s) => {
        s.on('error', () => undefined);
        return echoes(s, 'nope');
      },
      (e: unknown) => e,
    );
    const outcome = await Promise.race([attempt, new Promise((r) => setTimeout(() => r('still waiting'), 3000))]);
    expect(outcome).not.toBe(true); // never served
    expect(listener.stats().connections).toBe(2);
    for (const s of streams) expect(await echoes(s, 'still here')).toBe(true);
  });
});
