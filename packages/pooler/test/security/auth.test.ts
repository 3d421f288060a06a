// Password guessing: every failed login costs the client the auth-failure delay (answered by a
// timer, never by blocking the event loop), a guesser that hangs up early keeps its client slot
// until the delay is over, and nothing tells an unknown user from a wrong password: the same
// SQLSTATE and message, the same timing, and a SCRAM salt per unknown name that is as stable and
// as distinct as a real user's.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeFrontend, encodeStartupPacket } from '@quicpool/wire';
import { pgInfo, rejection, startPooler, withClient } from '../support/pooler-helpers.js';
import type { TestPooler } from '../support/pooler-helpers.js';
import { eventually, PROTOCOL_3_0, rawTcp, typedMessage } from '../hostile/helpers.js';

const DELAY_MS = 400;
let p: TestPooler;

beforeAll(async () => {
  p = await startPooler({ authFailureDelayMs: DELAY_MS });
});
afterAll(async () => {
  await p.close();
});

/** A pg login that must fail; resolves with its SQLSTATE, message and duration. */
async function failedLogin(user: string, password: string): Promise<{ code: string | undefined; message: string; ms: number }> {
  const c = new pg.Client(p.clientConfig({ user, password }));
  c.on('error', () => undefined);
  const t0 = performance.now();
  const e = await rejection(c.connect());
  const ms = performance.now() - t0;
  await c.end().catch(() => undefined);
  return { code: e.code, message: e.message, ms };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** The salt and iteration count the pooler's SCRAM server-first-message gives `user`. */
async function scramSaltOf(user: string): Promise<string> {
  const s = rawTcp(p.port);
  try {
    s.write(encodeStartupPacket({ type: 'StartupMessage', protocolVersion: PROTOCOL_3_0, parameters: { user, database: pgInfo.database } }));
    await s.until((m) => m.some((x) => x.type === 'AuthenticationSASL'));
    s.write(encodeFrontend({ type: 'SASLInitialResponse', mechanism: 'SCRAM-SHA-256', data: Buffer.from('n,,n=,r=fyko+d2lbbFgONRv9qkxdawL') }));
    const ms = await s.until((m) => m.some((x) => x.type === 'AuthenticationSASLContinue'));
    const cont = ms.find((x) => x.type === 'AuthenticationSASLContinue');
    const text = cont?.type === 'AuthenticationSASLContinue' ? cont.data.toString() : '';
    const salt = /(?:^|,)s=([^,]+)/.exec(text)?.[1];
    const iterations = /(?:^|,)i=(\d+)/.exec(text)?.[1];
    expect(salt).toBeDefined();
    return `${iterations}:${salt}`;
  } finally {
    s.destroy();
  }
}

describe('password guessing', () => {
  it('answers a wrong password and an unknown user alike: 28P01, the same message, each after the delay', async () => {
    const wrong: number[] = [];
    const unknown: number[] = [];
    for (let i = 0; i < 4; i++) {
      const [a, b] = await Promise.all([failedLogin(pgInfo.user, `not-${pgInfo.password}-${i}`), failedLogin(`nobody_${i}`, 'whatever')]);
      expect(a.code).toBe('28P01');
      expect(b.code).toBe('28P01');
      expect(a.message).toBe(`password authentication failed for user "${pgInfo.user}"`);
      expect(b.message).toBe(`password authentication failed for user "nobody_${i}"`);
      expect(a.ms).toBeGreaterThanOrEqual(DELAY_MS - 5);
      expect(b.ms).toBeGreaterThanOrEqual(DELAY_MS - 5);
      wrong.push(a.ms);
      unknown.push(b.ms);
    }
    console.log(`failed logins: wrong password median ${median(wrong).toFixed(0)} ms, unknown user median ${median(unknown).toFixed(0)} ms (delay ${DELAY_MS} ms)`);
    expect(Math.abs(median(wrong) - median(unknown))).toBeLessThan(150);
    // A right password is not delayed.
    const t0 = performance.now();
    await withClient(p.clientConfig(), async (c) => c.query('select 1'));
    expect(performance.now() - t0).toBeLessThan(DELAY_MS);
  });

  it('runs the delay on a timer: 30 failures at once take one delay, and a good client is served meanwhile', async () => {
    const t0 = performance.now();
    const failures = Promise.all(Array.from({ length: 30 }, (_, i) => failedLogin(i % 2 === 0 ? pgInfo.user : `ghost_${i}`, 'guess')));
    await new Promise((r) => setTimeout(r, DELAY_MS / 4));
    const q0 = performance.now();
    await withClient(p.clientConfig(), async (c) => expect((await c.query('select 1 as one')).rows).toEqual([{ one: 1 }]));
    const goodMs = performance.now() - q0;
    const results = await failures;
    const all = performance.now() - t0;
    expect(results.every((r) => r.code === '28P01')).toBe(true);
    expect(all).toBeLessThan(DELAY_MS * 4); // not 30 delays one after another
    expect(goodMs).toBeLessThan(DELAY_MS * 2);
  });

  it('keeps the client slot of a guesser that hangs up early until its delay is over', async () => {
    const tight = await startPooler({ authFailureDelayMs: 800, maxClientConnections: 2 });
    try {
      // Two guessers send a wrong SCRAM attempt and hang up at once.
      for (let i = 0; i < 2; i++) {
        const s = rawTcp(tight.port);
        s.write(encodeStartupPacket({ type: 'StartupMessage', protocolVersion: PROTOCOL_3_0, parameters: { user: `guess_${i}`, database: pgInfo.database } }));
        s.write(typedMessage('p', Buffer.concat([Buffer.from('SCRAM-SHA-1\0'), Buffer.from([0, 0, 0, 3]), Buffer.from('xyz')])));
        await s.until((m) => m.some((x) => x.type === 'AuthenticationSASL'));
        s.destroy();
      }
      await eventually(() => tight.pooler.stats().clients === 2, 2000, 'both guessers admitted');
      // Their slots are still taken: a third client is refused with 53300 ...
      const e = await rejection(withClient(tight.clientConfig(), async () => undefined));
      expect(e.code).toBe('53300');
      // ... until the delay has passed.
      await eventually(() => tight.pooler.stats().clients === 0, 3000, 'guesser slots released after the delay');
      await withClient(tight.clientConfig(), async (c) => expect((await c.query('select 1 as one')).rows).toEqual([{ one: 1 }]));
    } finally {
      await tight.close();
    }
  });

  it('gives each unknown user a stable SCRAM salt of its own, as for real users (no fixed mock salt to compare)', async () => {
    const [ghostA1, ghostA2, ghostB, real1, real2] = [await scramSaltOf('ghost_a'), await scramSaltOf('ghost_a'), await scramSaltOf('ghost_b'), await scramSaltOf(pgInfo.user), await scramSaltOf(pgInfo.user)];
    expect(ghostA1).toBe(ghostA2);
    expect(ghostA1).not.toBe(ghostB);
    expect(real1).toBe(real2);
    expect(ghostA1).not.toBe(real1);
    // The same iteration count for every name.
    expect(new Set([ghostA1, ghostB, real1].map((x) => x.split(':')[0]))).toEqual(new Set(['4096']));
    await eventually(() => p.pooler.stats().clients === 0, 3000, 'probes gone');
  });
});
