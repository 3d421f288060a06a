// What an operator sees of waiting and pinned clients, on the pooler's manual clock against the
// run's PostgreSQL: SHOW POOLS maxwait/maxwait_us and cl_waiting while a client waits (pool
// exhausted, and PAUSE), SHOW CLIENTS state 'waiting', the wait counted in SHOW STATS once served,
// and the admin console's own pool left out.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminDatabase, createAdminCommands, poolerAdminContext } from '../../src/index.js';
import { IDLE_BEFORE_GIVING_MS } from '../../src/pool/pool.js';
import type { AdminCommands } from '../../src/index.js';
import { ManualClock } from '../support/manual-clock.js';
import { eventually } from '../hostile/helpers.js';
import { pgInfo, startPooler } from '../support/pooler-helpers.js';
import type { TestPooler } from '../support/pooler-helpers.js';

const clock = new ManualClock();
let p: TestPooler;
let admin: AdminCommands;

beforeAll(async () => {
  p = await startPooler({ pool: { poolSize: 1, queryWaitTimeoutMs: 0 } }, { clock });
  admin = createAdminCommands(poolerAdminContext(p.pooler, { pauseTimeoutMs: 60_000 }));
  p.pooler.serveDatabase('quicpool', adminDatabase(admin, () => new Set([pgInfo.user])));
});
afterAll(() => p.close());

/** One SHOW as objects keyed by column name. */
async function show(what: string): Promise<Record<string, string | number | null>[]> {
  const r = await admin.run(`SHOW ${what}`);
  if (r.kind !== 'rows') throw new Error(`SHOW ${what}: ${JSON.stringify(r)}`);
  return r.rows.map((row) => Object.fromEntries(r.columns.map((c, i) => [c.name, row[i] ?? null])));
}
const myPool = async (): Promise<Record<string, string | number | null> | undefined> => (await show('POOLS')).find((r) => r['database'] === pgInfo.database);

async function connect(): Promise<pg.Client> {
  const c = new pg.Client(p.clientConfig());
  await c.connect();
  return c;
}

/** Lets I/O run until some client waits for a server connection; throws after 10 s. */
function untilWaiting(): Promise<void> {
  return eventually(() => p.pooler.view().clients.some((c) => c.state === 'waiting'), 10_000, 'a client waiting');
}

describe('waiting clients', () => {
  it('a client waiting for an exhausted pool: maxwait/maxwait_us grow with the clock, SHOW CLIENTS says waiting, SHOW STATS counts the wait', async () => {
    const holder = await connect();
    const waiter = await connect();
    try {
      await holder.query('BEGIN'); // the pool's one server connection is held
      const { total_wait_time: before } = (await show('STATS')).find((r) => r['database'] === pgInfo.database) ?? {};
      const answered = waiter.query('SELECT 1 AS one');
      await untilWaiting();
      clock.advance(2_345);
      expect(await myPool()).toMatchObject({ cl_active: 1, cl_waiting: 1, sv_active: 1, maxwait: 2, maxwait_us: 345_000 });
      expect((await show('CLIENTS')).filter((r) => r['database'] === pgInfo.database).map((r) => r['state']).sort()).toEqual(['active', 'waiting']);
      await holder.query('COMMIT');
      expect((await answered).rows).toEqual([{ one: 1 }]);
      expect(await myPool()).toMatchObject({ cl_waiting: 0, maxwait: 0, maxwait_us: 0 });
      const { total_wait_time: after } = (await show('STATS')).find((r) => r['database'] === pgInfo.database) ?? {};
      expect(Number(after) - Number(before)).toBe(2_345_000);
    } finally {
      await Promise.all([holder.end(), waiter.end()]);
    }
  });

  it('a client held by PAUSE waits visibly (cl_waiting, maxwait, state) and its wait is counted when RESUME serves it', async () => {
    const c = await connect();
    try {
      // The pool's connection has been idle a while (with two workers, the one that holds it hands
      // an idle connection to the other only then: IDLE_BEFORE_GIVING_MS on the pooler's clock).
      clock.advance(IDLE_BEFORE_GIVING_MS);
      await c.query('SELECT 1'); // a server connection exists and is idle
      const { total_wait_time: before } = (await show('STATS')).find((r) => r['database'] === pgInfo.database) ?? {};
      expect(await admin.run('PAUSE')).toEqual({ kind: 'command', tag: 'PAUSE' });
      const answered = c.query('SELECT 2 AS two');
      await untilWaiting();
      clock.advance(1_500);
      expect(await myPool()).toMatchObject({ cl_waiting: 1, sv_active: 0, maxwait: 1, maxwait_us: 500_000 });
      expect((await show('CLIENTS')).find((r) => r['database'] === pgInfo.database)?.['state']).toBe('waiting');
      await admin.run('RESUME');
      expect((await answered).rows).toEqual([{ two: 2 }]);
      const { total_wait_time: after } = (await show('STATS')).find((r) => r['database'] === pgInfo.database) ?? {};
      expect(Number(after) - Number(before)).toBe(1_500_000);
    } finally {
      await admin.run('RESUME');
      await c.end();
    }
  });

  it('the admin console is not a pool: SHOW POOLS and SHOW SERVERS leave it out while an admin session runs', async () => {
    const console = new pg.Client(p.clientConfig({ database: 'quicpool' }));
    await console.connect();
    try {
      await console.query('SHOW POOLS');
      expect((await show('POOLS')).map((r) => r['database'])).not.toContain('quicpool');
      expect((await show('SERVERS')).map((r) => r['database'])).not.toContain('quicpool');
      expect(p.pooler.stats().pools.map((x) => x.database)).not.toContain('quicpool');
    } finally {
      await console.end();
    }
  });
});

describe('pinned sessions', () => {
  let q: TestPooler;
  beforeAll(async () => {
    q = await startPooler({ pool: { poolSize: 4 }, databases: { template1: { sessionStatePolicy: 'reject' } } });
  });
  afterAll(() => q.close());

  it('SHOW CLIENTS says which clients are pinned and by what (SET, PREPARE, LISTEN); the others show nothing', async () => {
    const commands = createAdminCommands(poolerAdminContext(q.pooler, { pauseTimeoutMs: 1000 }));
    const clients = [new pg.Client(q.clientConfig()), new pg.Client(q.clientConfig()), new pg.Client(q.clientConfig()), new pg.Client(q.clientConfig())];
    await Promise.all(clients.map((c) => c.connect()));
    try {
      const [set, prepare, listen, plain] = clients as [pg.Client, pg.Client, pg.Client, pg.Client];
      await set.query("SET work_mem = '8MB'");
      await prepare.query('PREPARE p AS SELECT 1');
      await listen.query('LISTEN quicpool_observability');
      await plain.query('SELECT 1');
      await set.query('SET statement_timeout = 0'); // the first reason stays
      const r = await commands.run('SHOW CLIENTS');
      if (r.kind !== 'rows') throw new Error(JSON.stringify(r));
      const pinned = r.columns.findIndex((c) => c.name === 'pinned');
      expect(r.columns[pinned]).toEqual({ name: 'pinned', type: 'text' });
      expect(r.rows.map((row) => row[pinned]).sort()).toEqual(['', 'LISTEN', 'PREPARE', 'SET']);
      expect(q.pooler.stats().pools.find((x) => x.database === pgInfo.database)?.active).toBe(3); // pinned: held between transactions
    } finally {
      await Promise.all(clients.map((c) => c.end()));
    }
  });

  it('a database of its own policy (databases.template1: reject) refuses what another database pins', async () => {
    const c = new pg.Client(q.clientConfig({ database: 'template1' }));
    await c.connect();
    try {
      await expect(c.query("SET work_mem = '8MB'")).rejects.toMatchObject({ code: '0A000' });
      expect((await c.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]); // the session carries on
      expect(q.pooler.view().clients.map((x) => x.pinned)).toEqual([null]);
    } finally {
      await c.end();
    }
  });
});
