// Fault: Postgres itself restarted (fast shutdown, then start on the same port and data) under
// load. Uses a cluster of its own: the run's shared cluster is never restarted. Transactions in
// flight fail with Postgres's shutdown error or a connection error; every committed one is still
// there afterwards and no failed one is; the pooler drops every dead backend, opens new ones when
// Postgres is back, and serves every client again without being restarted itself.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres } from '@quicpool/pg-fixture';
import type { PostgresServer } from '@quicpool/pg-fixture';
import { listenTcp } from '@quicpool/transport';
import { createPooler } from '../support/create-pooler.js';
import type { Pooler } from '../../src/index.js';
import { withClient } from '../support/pooler-helpers.js';
import { backendsOf, createFaultRole, expectNoLeak, until } from './helpers.js';
import type { FaultRole } from './helpers.js';
import { expectExactlyCommitted, runWorker } from './workers.js';

const POOL_SIZE = 4;
const WORKERS = 6;
let server: PostgresServer;
let role: FaultRole;
let pooler: Pooler;
let port: number;

beforeAll(async () => {
  server = await startPostgres();
  role = await createFaultRole(server.info, 'fault_restart');
  pooler = createPooler({
    server: { host: server.info.host, port: server.info.port, connectTimeoutMs: 2_000 },
    users: { [role.user]: { password: role.password } },
    pool: { poolSize: POOL_SIZE, queryWaitTimeoutMs: 20_000 },
  });
  const listener = await listenTcp({ host: '127.0.0.1', port: 0 });
  pooler.listen(listener);
  port = listener.address().port;
}, 60_000);
afterAll(async () => {
  await pooler?.close({ graceful: false });
  await server?.stop();
});

const clientConfig = () => ({ host: '127.0.0.1', port, database: server.info.database, user: role.user, password: role.password });

describe('Postgres restarted under load', () => {
  it('in-flight transactions fail cleanly, committed ones survive, the pooler reconnects by itself', async () => {
    const load = Array.from({ length: WORKERS }, (_, i) =>
      // Failures do not use up a worker's transactions (up to 100, 15 s of retries): however long
      // the restart takes on a loaded machine, each worker finishes after it.
      runWorker(i, clientConfig, role, { transactions: 12, idleInTxMs: 40, sleepS: 0.05, retryDelayMs: 150, retries: 100 }));
    await until('the pool is busy', async () => (await backendsOf(server.info, role.user)).length === POOL_SIZE, 10_000);
    const before = (await backendsOf(server.info, role.user)).map((b) => b.pid);
    await server.restart();
    const results = await Promise.all(load);

    const errors = results.flatMap((r) => r.errors);
    expect(errors.length).toBeGreaterThan(0); // the restart was felt...
    for (const e of errors) {
      // ...always as an ErrorResponse with a SQLSTATE: Postgres's own shutdown FATAL (57P01), its
      // "shutting down / starting up" refusal (57P03), or the pooler's lost/unreachable server (08006/08001).
      expect(['57P01', '57P03', '08006', '08001']).toContain(e.code);
    }
    for (const r of results) expect(r.committed).toHaveLength(12); // ...and every worker got through
    await withClient(clientConfig(), (c) => expectExactlyCommitted(c, role, results));

    // Every backend from before is gone; the pooler's count matches the new cluster's.
    await expectNoLeak(server.info, pooler, role.user, POOL_SIZE);
    const after = (await backendsOf(server.info, role.user)).map((b) => b.pid);
    for (const pid of after) expect(before).not.toContain(pid);
    // A full round without any error: the pool recovered.
    const again = await Promise.all(Array.from({ length: WORKERS }, (_, i) =>
      runWorker(100 + i, clientConfig, role, { transactions: 3, idleInTxMs: 0, sleepS: 0.01 })));
    for (const r of again) expect(r.errors).toEqual([]);
    await expectNoLeak(server.info, pooler, role.user, POOL_SIZE);
  }, 60_000);
});
