// Password guessing: every failed login costs the client the auth-failure delay (answered by a
// timer, never by blocking the event loop), a guesser that hangs up early keeps its client slot
// until the delay is over, and nothing tells an unknown user from a wrong password: the same
// SQLSTATE and message, the same delay, and a SCRAM salt per unknown name that is as stable and
// as distinct as a real user's. The pooler runs on a manual clock: the delay passes when the test
// says so, and "not answered before it" is an observed fact, not a measured duration.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeFrontend, encodeStartupPacket, SQLSTATE } from '@quicpool/wire';
import { adminDatabase } from '../../src/index.js';
import { ManualClock, turns } from '../support/manual-clock.js';
import { pgInfo, rejection, startPooler, withClient } from '../support/pooler-helpers.js';
import type { TestPooler } from '../support/pooler-helpers.js';
import { eventually, PROTOCOL_3_0, rawTcp, typedMessage } from '../hostile/helpers.js';

const DELAY_MS = 400;
const clock = new ManualClock();
let p: TestPooler;

beforeAll(async () => {
  p = await startPooler({ authFailureDelayMs: DELAY_MS }, { clock });
  // An admin console whose only admin user is the fixture's trust user.
  const commands = { run: () => Promise.resolve({ kind: 'error' as const, sqlstate: SQLSTATE.FEATURE_NOT_SUPPORTED, message: 'no commands here' }) };
  p.pooler.serveDatabase('console', adminDatabase(commands, () => new Set([pgInfo.trustUser])));
});
afterAll(async () => {
  await p.close();
});

interface FailedLogin {
  /** Set once the login has failed. */
  result: { code: string | undefined; message: string } | null;
  readonly done: Promise<{ code: string | undefined; message: string }>;
}

/** Starts a pg login that must fail; `result` is filled in when it has. */
function failedLogin(pooler: TestPooler, user: string, password: string, database = pgInfo.database): FailedLogin {
  const c = new pg.Client(pooler.clientConfig({ user, password, database }));
  c.on('error', () => undefined);
  const login: FailedLogin = {
    result: null,
    done: rejection(c.connect()).then(async (e) => {
      await c.end().catch(() => undefined);
      login.result = { code: e.code, message: e.message };
      return login.result;
    }),
  };
  return login;
}

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
  it('answers a wrong password and an unknown user alike: 28P01, the same message, both held for the delay', async () => {
    for (let i = 0; i < 2; i++) {
      const due = clock.now() + DELAY_MS;
      const wrong = failedLogin(p, pgInfo.user, `not-${pgInfo.password}-${i}`);
      const unknown = failedLogin(p, `nobody_${i}`, 'whatever');
      // Both failures are held on the pooler's timer, armed with the delay ...
      await eventually(() => clock.timersDue(due) === 2, 5000, 'both failed logins held');
      await turns();
      expect([wrong.result, unknown.result]).toEqual([null, null]);
      // ... not answered a millisecond early ...
      clock.advance(DELAY_MS - 1);
      await turns();
      expect([wrong.result, unknown.result]).toEqual([null, null]);
      // ... and answered together once it has passed.
      clock.advance(1);
      const [a, b] = await Promise.all([wrong.done, unknown.done]);
      expect(a).toEqual({ code: '28P01', message: `password authentication failed for user "${pgInfo.user}"` });
      expect(b).toEqual({ code: '28P01', message: `password authentication failed for user "nobody_${i}"` });
    }
    // A right password is not delayed: served while the clock stands still.
    await withClient(p.clientConfig(), async (c) => expect((await c.query('select 1 as one')).rows).toEqual([{ one: 1 }]));
  });

  it('runs the delay on a timer: 30 failures at once wait for one delay, and a good client is served meanwhile', async () => {
    const due = clock.now() + DELAY_MS;
    const failures = Array.from({ length: 30 }, (_, i) => failedLogin(p, i % 2 === 0 ? pgInfo.user : `ghost_${i}`, 'guess'));
    await eventually(() => clock.timersDue(due) === 30, 10_000, '30 failed logins held');
    await withClient(p.clientConfig(), async (c) => expect((await c.query('select 1 as one')).rows).toEqual([{ one: 1 }]));
    expect(failures.filter((f) => f.result !== null)).toEqual([]);
    clock.advance(DELAY_MS);
    const results = await Promise.all(failures.map((f) => f.done));
    expect(results.every((r) => r.code === '28P01')).toBe(true);
  });

  it('keeps the client slot of a guesser that hangs up early until its delay is over', async () => {
    const tightClock = new ManualClock();
    const tight = await startPooler({ authFailureDelayMs: 800, maxClientConnections: 2 }, { clock: tightClock });
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
      expect(tight.pooler.stats().clients).toBe(2);
      tightClock.advance(800);
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

describe('the admin console', () => {
  const consoleLogin = (user: string, password: string): FailedLogin => failedLogin(p, user, password, 'console');

  it('authenticates first and refuses a non-admin user after the failure delay: no name is told apart before', async () => {
    const due = clock.now() + DELAY_MS;
    // A non-admin user with its right password, the same user with a wrong one, an unknown name.
    const nonAdmin = consoleLogin(pgInfo.user, pgInfo.password);
    const wrong = consoleLogin(pgInfo.user, 'guess');
    const unknown = consoleLogin('ghost', 'guess');
    await eventually(() => clock.timersDue(due) === 3, 5000, 'the three console logins held');
    await turns();
    expect([nonAdmin.result, wrong.result, unknown.result]).toEqual([null, null, null]);
    clock.advance(DELAY_MS - 1);
    await turns();
    expect([nonAdmin.result, wrong.result, unknown.result]).toEqual([null, null, null]);
    clock.advance(1);
    expect(await nonAdmin.done).toEqual({ code: '28000', message: `user "${pgInfo.user}" is not an admin user of the "console" console` });
    expect(await wrong.done).toEqual({ code: '28P01', message: `password authentication failed for user "${pgInfo.user}"` });
    expect(await unknown.done).toEqual({ code: '28P01', message: 'password authentication failed for user "ghost"' });
    // An admin user gets in at once, while the clock stands still.
    await withClient(p.clientConfig({ user: pgInfo.trustUser, password: undefined, database: 'console' }), async (c) => expect((await rejection(c.query('show pools'))).code).toBe('0A000'));
    await eventually(() => p.pooler.stats().clients === 0, 3000, 'console clients gone');
  });
});
