// Limits and timeouts not covered elsewhere, each with its documented outcome: maxMessageSize
// (08P01), server.connectTimeoutMs (08001), a client still in startup at shutdown (57P01),
// minPoolSize (pre-warmed), serverLifetimeMs and serverIdleTimeoutMs (backends replaced/closed).
// The timeouts tested run on a manual clock: they pass when the test moves it, never by waiting.
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { BackendDecoder, encodeStartupPacket } from '@quicpool/wire';
import type { BackendMessage } from '@quicpool/wire';
import { ManualClock, turns } from '../support/manual-clock.js';
import { pgInfo, rejection, startPooler, withClient } from '../support/pooler-helpers.js';
import type { TestPooler } from '../support/pooler-helpers.js';

let p: TestPooler | undefined;
const cleanups: (() => void)[] = [];
afterEach(async () => {
  await p?.close();
  p = undefined;
  for (const f of cleanups.splice(0)) f();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(cond: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await sleep(25);
  }
}

describe('limits and timeouts (more)', () => {
  it('a client message larger than maxMessageSize gets 08P01 and the session closes', async () => {
    p = await startPooler({ maxMessageSize: 4096 });
    await withClient(p.clientConfig(), async (c) => {
      expect((await c.query('select $1::text as t', ['x'.repeat(1000)])).rows[0].t).toHaveLength(1000);
      const e = await rejection(c.query('select $1::text as t', ['x'.repeat(10_000)]));
      expect(e.code).toBe('08P01');
    });
    await withClient(p.clientConfig(), async (c) => expect((await c.query('select 1 as ok')).rows[0].ok).toBe(1));
  });

  it('a server that does not answer the login within server.connectTimeoutMs gives 08001', async () => {
    const CONNECT_TIMEOUT_MS = 200;
    const accepted: net.Socket[] = [];
    const silent = net.createServer((s) => void accepted.push(s)); // accepts and never speaks
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    cleanups.push(() => {
      for (const s of accepted) s.destroy();
      silent.close();
    });
    const { port } = silent.address() as net.AddressInfo;
    const clock = new ManualClock();
    p = await startPooler({ server: { host: '127.0.0.1', port, connectTimeoutMs: CONNECT_TIMEOUT_MS } }, { clock });
    let answered = false;
    const failed = rejection(withClient(p.clientConfig(), (c) => c.query('select 1'))).finally(() => (answered = true));
    // The pooler's login to the silent server is under way, its timer armed on the pooler's clock ...
    await until(() => accepted.length === 1 && clock.timersDue(clock.now() + CONNECT_TIMEOUT_MS) === 1, 5000);
    await turns();
    expect(answered).toBe(false);
    // ... it does not give up a millisecond early ...
    clock.advance(CONNECT_TIMEOUT_MS - 1);
    await turns();
    expect(answered).toBe(false);
    // ... and the client gets 08001 once the timeout has passed.
    clock.advance(1);
    expect((await failed).code).toBe('08001');
  });

  it('a client still in startup when the pooler shuts down gets 57P01; new connections are refused', async () => {
    p = await startPooler();
    await withClient(p.clientConfig(), (c) => c.query('begin')); // the pooler has served someone
    const holder = await new Promise<net.Socket>((resolve) => {
      const s = net.connect({ host: '127.0.0.1', port: p!.port }, () => resolve(s));
    });
    holder.on('error', () => undefined);
    cleanups.push(() => holder.destroy());
    await until(() => p!.pooler.stats().clients >= 1, 2000); // accepted, startup not yet sent
    const messages: BackendMessage[] = [];
    const decoder = new BackendDecoder();
    holder.on('data', (chunk: Buffer) => {
      decoder.push(chunk);
      messages.push(...decoder.drain());
    });
    const closing = p.pooler.close({ graceful: true, deadlineMs: 2000 });
    holder.write(encodeStartupPacket({ type: 'StartupMessage', protocolVersion: 3 << 16, parameters: { user: pgInfo.trustUser, database: pgInfo.database } }));
    await until(() => holder.destroyed || holder.readableEnded || messages.length > 0, 3000);
    await closing;
    const error = messages.find((m) => m.type === 'ErrorResponse');
    // The drain closes sessions without a transaction at once, those still in startup included.
    expect(error?.type === 'ErrorResponse' ? error.fields['C'] : undefined).toBe('57P01');
    const late = net.connect({ host: '127.0.0.1', port: p.port });
    const refused = await new Promise<string>((resolve) => {
      late.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
      late.on('close', () => resolve('closed'));
    });
    expect(['ECONNREFUSED', 'closed']).toContain(refused);
  });

  it('minPoolSize pre-warms backends; serverLifetimeMs and serverIdleTimeoutMs close them', async () => {
    // Backends age, and the pool's maintenance (every 1000 ms of the pooler's clock) runs, only as
    // the test moves the clock.
    const lifetimeClock = new ManualClock();
    p = await startPooler({ pool: { poolSize: 4, minPoolSize: 2, serverLifetimeMs: 300, serverIdleTimeoutMs: 0 } }, { clock: lifetimeClock });
    const firstPid = await withClient(p.clientConfig(), async (c) => (await c.query('select pg_backend_pid() as pid')).rows[0].pid as number);
    await until(() => (p!.pooler.stats().pools[0]?.idle ?? 0) >= 2, 3000); // minPoolSize reached without clients
    lifetimeClock.advance(300); // the backends made at 0 reach their lifetime (no maintenance tick yet)
    // Past its lifetime the backend is not reused: the next client gets a new one.
    const laterPid = await withClient(p.clientConfig(), async (c) => (await c.query('select pg_backend_pid() as pid')).rows[0].pid as number);
    expect(laterPid).not.toBe(firstPid);
    await p.close();

    const idleClock = new ManualClock();
    p = await startPooler({ pool: { poolSize: 4, minPoolSize: 1, serverIdleTimeoutMs: 200 } }, { clock: idleClock });
    // The pool is made at 0 of the clock: its maintenance ticks at 1000, 2000, ...
    await withClient(p.clientConfig(), (c) => c.query('select 1'));
    idleClock.advance(850);
    // Three transactions open at once hold three backends (the pool's first and two new ones),
    // whatever the machine's speed; then all three are idle.
    let begun = 0;
    let allBegun = (): void => undefined;
    const together = new Promise<void>((resolve) => (allBegun = resolve));
    await Promise.all([1, 2, 3].map(() => withClient(p!.clientConfig(), async (c) => {
      await c.query('begin');
      if (++begun === 3) allBegun();
      await together;
      await c.query('commit');
    })));
    expect(p.pooler.stats().pools[0]).toMatchObject({ idle: 3, connecting: 0 });
    const { idle } = p.pooler.stats().pools[0]!;
    // At the tick at 1000 they have been idle 150 ms, less than serverIdleTimeoutMs: all kept ...
    idleClock.advance(150);
    expect(p.pooler.stats().pools[0]).toMatchObject({ idle, closedTotal: 0 });
    // ... at the tick at 2000, 1150 ms: the idle ones are closed down to minPoolSize.
    idleClock.advance(1000);
    expect(p.pooler.stats().pools[0]!.idle).toBe(1);
    expect(p.pooler.stats().pools[0]!.closedTotal).toBe(2);
  });
});
