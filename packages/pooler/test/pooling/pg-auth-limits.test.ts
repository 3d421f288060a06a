import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../hostile/helpers.js';
import { ManualClock, turns } from '../support/manual-clock.js';
import { pgInfo, rejection, startPooler, untilRunning, withClient } from '../support/pooler-helpers.js';
import type { TestPooler } from '../support/pooler-helpers.js';

let p: TestPooler | undefined;
afterEach(async () => {
  await p?.close();
  p = undefined;
});

describe('client authentication', () => {
  it('SCRAM-SHA-256: right password connects, wrong gets 28P01, unknown user gets 28P01', async () => {
    p = await startPooler();
    await withClient(p.clientConfig(), async (c) => expect((await c.query('select 1 as x')).rows[0].x).toBe(1));
    expect((await rejection(withClient(p.clientConfig({ password: 'wrong' }), async () => undefined))).code).toBe('28P01');
    expect((await rejection(withClient(p.clientConfig({ user: 'nobody' }), async () => undefined))).code).toBe('28P01');
  });

  it('accepts a SCRAM secret copied from pg_authid (no plaintext for client auth)', async () => {
    const direct = { host: pgInfo.host, port: pgInfo.port, database: pgInfo.database, user: pgInfo.user, password: pgInfo.password };
    const secret = await withClient(direct, async (c) => (await c.query('select rolpassword from pg_authid where rolname = $1', [pgInfo.user])).rows[0].rolpassword as string);
    expect(secret).toMatch(/^SCRAM-SHA-256\$/);
    p = await startPooler({ users: { [pgInfo.user]: { scramSecret: secret, serverPassword: pgInfo.password } } });
    await withClient(p.clientConfig(), async (c) => expect((await c.query('select 1 as x')).rows[0].x).toBe(1));
    expect((await rejection(withClient(p.clientConfig({ password: 'wrong' }), async () => undefined))).code).toBe('28P01');
  });

  it('md5 over plain TCP is refused with 28000 unless allowInsecurePasswordAuth', async () => {
    p = await startPooler();
    const md5 = { user: pgInfo.md5User, password: pgInfo.md5Password };
    expect((await rejection(withClient(p.clientConfig(md5), async () => undefined))).code).toBe('28000');
    await p.close();
    p = await startPooler({ allowInsecurePasswordAuth: true });
    await withClient(p.clientConfig(md5), async (c) => expect((await c.query('select current_user as u')).rows[0].u).toBe(pgInfo.md5User));
    expect((await rejection(withClient(p.clientConfig({ ...md5, password: 'wrong' }), async () => undefined))).code).toBe('28P01');
  });

  it("the cleartext 'password' method works where allowed and is refused on plain TCP otherwise", async () => {
    p = await startPooler({ users: { [pgInfo.user]: { password: pgInfo.password, auth: 'password' } } });
    expect((await rejection(withClient(p.clientConfig(), async () => undefined))).code).toBe('28000');
    await p.close();
    p = await startPooler({ users: { [pgInfo.user]: { password: pgInfo.password, auth: 'password' } }, allowInsecurePasswordAuth: true });
    await withClient(p.clientConfig(), async (c) => expect((await c.query('select 1 as x')).rows[0].x).toBe(1));
    expect((await rejection(withClient(p.clientConfig({ password: 'wrong' }), async () => undefined))).code).toBe('28P01');
  });

  it('trust users connect without a password; a server login failure keeps the server SQLSTATE', async () => {
    p = await startPooler();
    await withClient(p.clientConfig({ user: pgInfo.trustUser, password: undefined }), async (c) => {
      expect((await c.query('select current_user as u')).rows[0].u).toBe(pgInfo.trustUser);
    });
    expect((await rejection(withClient(p.clientConfig({ database: 'no_such_database' }), async () => undefined))).code).toBe('3D000');
    await new Promise((r) => setTimeout(r, 50));
    expect(p.pooler.stats().pools.map((x) => x.database)).not.toContain('no_such_database'); // not kept
  });

  it('rejects an unsupported startup parameter with 0A000', async () => {
    p = await startPooler();
    const e = await rejection(withClient(p.clientConfig({ options: '-c work_mem=1MB' }), async () => undefined));
    expect(e.code).toBe('0A000');
  });
});

describe('limits and timeouts', () => {
  it('maxClientConnections and maxClientsPerPool refuse with 53300', async () => {
    p = await startPooler({ maxClientConnections: 2 });
    await withClient(p.clientConfig(), async () => {
      await withClient(p!.clientConfig(), async () => {
        expect((await rejection(withClient(p!.clientConfig(), async () => undefined))).code).toBe('53300');
      });
    });
    await p.close();
    p = await startPooler({ maxClientsPerPool: 1 });
    await withClient(p.clientConfig(), async () => {
      expect((await rejection(withClient(p!.clientConfig(), async () => undefined))).code).toBe('53300');
      // another pool is not affected
      await withClient(p!.clientConfig({ user: pgInfo.trustUser, password: undefined }), async (c) => {
        await c.query('select 1');
      });
    });
    expect(p.pooler.stats().clientsRefusedTotal).toBe(1);
  });

  it('a client that waits longer than queryWaitTimeoutMs for a backend gets 57014', async () => {
    // The timeout tests run on a manual clock: a timeout passes when the test moves the clock.
    const WAIT_TIMEOUT_MS = 200;
    const clock = new ManualClock();
    p = await startPooler({ pool: { poolSize: 1, queryWaitTimeoutMs: WAIT_TIMEOUT_MS } }, { clock });
    await withClient(p.clientConfig(), async (a) => {
      await a.query('begin'); // pins the only backend
      let answered = false;
      const refused = rejection(withClient(p!.clientConfig(), (b) => b.query('select 1'))).finally(() => (answered = true));
      // b waits for the backend, its deadline armed on the pooler's clock ...
      await eventually(() => p!.pooler.stats().pools[0]?.waiting === 1 && clock.timersDue(clock.now() + WAIT_TIMEOUT_MS) === 1, 5000, 'b waiting');
      // ... still waiting a millisecond before it ...
      clock.advance(WAIT_TIMEOUT_MS - 1);
      await turns();
      expect(answered).toBe(false);
      // ... and refused once it has passed.
      clock.advance(1);
      const e = await refused;
      expect(e.code).toBe('57014');
      await a.query('commit');
    });
    expect(p.pooler.stats().pools[0]!.waitTimeoutsTotal).toBe(1);
  });

  it('idleTransactionTimeoutMs closes a client idle in a transaction with 25P03', async () => {
    const IDLE_TX_TIMEOUT_MS = 100;
    const clock = new ManualClock();
    p = await startPooler({ pool: { idleTransactionTimeoutMs: IDLE_TX_TIMEOUT_MS } }, { clock });
    await withClient(p.clientConfig(), async (a) => {
      const errors: Error[] = [];
      a.on('error', (e) => errors.push(e));
      await a.query('begin');
      // Idle in the transaction: the timer is armed on the pooler's clock ...
      await eventually(() => clock.timersDue(clock.now() + IDLE_TX_TIMEOUT_MS) === 1, 5000, 'idle-in-transaction timer armed');
      // ... and has not fired a millisecond early ...
      clock.advance(IDLE_TX_TIMEOUT_MS - 1);
      await turns();
      expect(errors).toEqual([]);
      expect(p!.pooler.stats().clients).toBe(1);
      // ... but once it is due (the FATAL comes while no query runs: an 'error' event).
      clock.advance(1);
      await eventually(() => errors.length > 0, 5000, 'session closed');
      const e = await rejection(a.query('select 1'));
      expect([e, ...errors].some((x) => (x as { code?: string }).code === '25P03')).toBe(true);
    });
  });
});

describe('backend failure and cancel', () => {
  it('client.cancel cancels the running query with 57014 and only that one', async () => {
    p = await startPooler({ pool: { poolSize: 4 } });
    await withClient(p.clientConfig(), async (a) => {
      await withClient(p!.clientConfig(), async (other) => {
        const slowOther = other.query('select pg_sleep(0.5) as s');
        // A text of its own: untilRunning must not see another test file's query on the shared server.
        const sql = 'select pg_sleep(10) /* pg-auth-limits: client.cancel */';
        const slow = a.query(sql);
        await untilRunning(sql);
        // node-postgres's own cancel: a CancelRequest on a new connection with the key the pooler gave `a`.
        // (pg.Client#cancel exists at runtime but not in @types/pg.)
        const canceller = new pg.Client(p!.clientConfig()) as pg.Client & { cancel(target: pg.Client, query: unknown): void };
        canceller.cancel(a, (a as unknown as { _activeQuery: unknown })._activeQuery);
        const e = await rejection(slow);
        expect(e.code).toBe('57014');
        expect((await slowOther).rows).toHaveLength(1);
        expect((await a.query('select 1 as ok')).rows[0].ok).toBe(1);
      });
    });
    expect(p.pooler.stats().cancelsForwardedTotal).toBe(1);
  });

  it('a backend that dies mid-transaction gives its client an error and is replaced', async () => {
    p = await startPooler({ pool: { poolSize: 2 } });
    await withClient(p.clientConfig(), async (a) => {
      const errors: Error[] = [];
      a.on('error', (e) => errors.push(e));
      await a.query('begin');
      const pid = (await a.query('select pg_backend_pid() as pid')).rows[0].pid as number;
      await withClient(p!.clientConfig(), (killer) => killer.query('select pg_terminate_backend($1)', [pid]));
      const e = await rejection(a.query('select 1'));
      // The server's own FATAL (57P01) is forwarded, or the pooler's 08006 when the socket drops first.
      const codes = [e, ...errors].map((x) => (x as { code?: string }).code);
      expect(codes.some((c) => c === '57P01' || c === '08006')).toBe(true);
    });
    await withClient(p.clientConfig(), async (b) => expect((await b.query('select 1 as ok')).rows[0].ok).toBe(1));
  });
});
