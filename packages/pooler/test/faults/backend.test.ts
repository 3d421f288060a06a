// Fault: a Postgres backend killed (pg_terminate_backend from another superuser connection) while
// its client is in the middle of a query, and while its client sits idle inside a transaction.
// Only that client's transaction fails; every other client's transactions commit with their own
// state; the pooler drops the dead backend (no leak) and the next client is served.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { listenTcp } from '@quicpool/transport';
import { createPooler } from '../support/create-pooler.js';
import type { Pooler } from '../../src/index.js';
import { pgInfo, withClient } from '../support/pooler-helpers.js';
import { backendsOf, createFaultRole, dropFaultRole, expectNoLeak, superuser, until } from './helpers.js';
import type { FaultRole } from './helpers.js';
import { expectExactlyCommitted, runWorker } from './workers.js';

const POOL_SIZE = 4;
const WORKERS = 6;
let role: FaultRole;
let pooler: Pooler;
let port: number;

beforeAll(async () => {
  role = await createFaultRole(pgInfo, 'fault_backend');
});
afterAll(async () => {
  await dropFaultRole(pgInfo, role);
});
afterEach(async () => {
  await pooler.close({ graceful: false });
});

async function start(): Promise<void> {
  pooler = createPooler({
    server: { host: pgInfo.host, port: pgInfo.port },
    users: { [role.user]: { password: role.password } },
    pool: { poolSize: POOL_SIZE, queryWaitTimeoutMs: 20_000, serverCheckDelayMs: 0 },
  });
  const listener = await listenTcp({ host: '127.0.0.1', port: 0 });
  pooler.listen(listener);
  port = listener.address().port;
}

const clientConfig = () => ({ host: '127.0.0.1', port, database: pgInfo.database, user: role.user, password: role.password });

describe.each([
  { when: 'mid-query', state: 'active', match: 'pg_sleep' },
  { when: 'mid-transaction (idle in transaction)', state: 'idle in transaction', match: 'insert' },
] as const)('a backend killed $when', ({ state, match }) => {
  it('fails only its own client; the others commit; no backend leaks; the pool recovers', async () => {
    await start();
    await superuser(pgInfo, (c) => c.query(`truncate ${role.table}`));
    const load = Array.from({ length: WORKERS }, (_, i) =>
      runWorker(i, clientConfig, role, { transactions: 4, idleInTxMs: 120, sleepS: 0.12 }));
    // Kill a backend of the test's role in the wanted state, from outside. Found and killed in
    // one statement: looked up first, it could have finished its transaction by the kill.
    let victimPid = 0;
    await superuser(pgInfo, (c) => until(`a backend ${state} killed`, async () => {
      const killed = await c.query<{ pid: number; ok: boolean }>(
        `select pid, pg_terminate_backend(pid) as ok from (select pid from pg_stat_activity
           where usename = $1 and backend_type = 'client backend' and state = $2 and position($3 in query) > 0 limit 1) as victim`,
        [role.user, state, match],
      );
      victimPid = killed.rows[0]?.pid ?? 0;
      return killed.rows[0]?.ok === true;
    }, 10_000));
    const results = await Promise.all(load);

    // Exactly one transaction of one client failed.
    const failed = results.filter((r) => r.errors.length > 0);
    expect(failed).toHaveLength(1);
    expect(failed[0]!.errors).toHaveLength(1);
    // Postgres's own FATAL reaches the client (as an ErrorResponse), then the pooler closes it.
    expect(failed[0]!.errors[0]!.code).toBe('57P01');
    expect(results.reduce((n, r) => n + r.committed.length, 0)).toBe(WORKERS * 4 - 1);
    await withClient(clientConfig(), (c) => expectExactlyCommitted(c, role, results));

    // The dead backend is gone from the pool; what remains matches pg_stat_activity.
    await expectNoLeak(pgInfo, pooler, role.user, POOL_SIZE);
    expect((await backendsOf(pgInfo, role.user)).map((b) => b.pid)).not.toContain(victimPid);
    // A new client works, on a live backend.
    await withClient(clientConfig(), async (c) => {
      expect((await c.query('select 41 + 1 as x')).rows[0].x).toBe(42);
      expect((await c.query('select pg_backend_pid() as pid')).rows[0].pid).not.toBe(victimPid);
    });
    await expectNoLeak(pgInfo, pooler, role.user, POOL_SIZE);
  }, 30_000);
});
