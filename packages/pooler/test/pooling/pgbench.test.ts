// pgbench (from the machine's PostgreSQL client tools) through the pooler: -S and a custom
// script, a few seconds each, zero failed transactions. Skipped with a printed reason only when
// pgbench is not installed.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, dropTestDatabase } from '@quicpool/pg-fixture';
import { countingBackends, pgInfo, startPooler } from '../support/pooler-helpers.js';
import { testWorkers } from '../support/create-pooler.js';
import type { TestPooler } from '../support/pooler-helpers.js';
import { failedTransactions, pgbench, PGBENCH_MISSING, processedTransactions, runPgbench } from '../support/pgbench-helpers.js';

if (pgbench === null) console.log(`pgbench test skipped: ${PGBENCH_MISSING}`);

describe.skipIf(pgbench === null)('pgbench through the pooler', () => {
  let p: TestPooler;
  let dir: string;
  // pgbench's tables have fixed names: this file's are in a database of its own (another file
  // initializes pgbench at the same time).
  const DB = 'qp_pgbench_pooling';
  const bench = (args: string[]): Promise<string> => runPgbench(args, p.port, 60_000, DB);
  beforeAll(async () => {
    await createTestDatabase(pgInfo, DB);
    p = await startPooler({ pool: { poolSize: 5 } });
    dir = mkdtempSync(join(tmpdir(), 'quicpool-pgbench-'));
    await bench(['-i', '-s', '1', '-q']); // COPY and VACUUM go through the pooler too
  }, 60_000);
  afterAll(async () => {
    await p?.close();
    await dropTestDatabase(pgInfo, DB);
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('runs -S with 20 clients for 3 s with zero failed transactions', async () => {
    const out = await bench(['-S', '-c', '20', '-j', '2', '-T', '3', '-M', 'extended']);
    expect(failedTransactions(out)).toBe(0);
    expect(processedTransactions(out)).toBeGreaterThan(100);
  }, 30_000);

  it('runs a custom script (transactions with writes) for 3 s with zero failed transactions', async () => {
    const script = join(dir, 'custom.sql');
    writeFileSync(
      script,
      ['\\set aid random(1, 100000)', '\\set delta random(-5000, 5000)', 'BEGIN;',
        'UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;',
        'SELECT abalance FROM pgbench_accounts WHERE aid = :aid;', 'END;'].join('\n'),
    );
    const out = await bench(['-f', script, '-c', '10', '-j', '2', '-T', '3']);
    expect(failedTransactions(out)).toBe(0);
    expect(processedTransactions(out)).toBeGreaterThan(50);
  }, 30_000);

  it('runs -M prepared with 40 clients on 2 threads over a pool of 10 (statements it knows are prepared without a backend)', async () => {
    // pgbench prepares with the synchronous PQprepare (Parse + Sync): a thread blocked in one
    // client's PQprepare cannot finish the transactions its other clients hold backends in. The
    // pooler answers the Parse of a statement it already knows without a backend, so this completes.
    const small = await startPooler({ pool: { poolSize: 10, poolMode: 'transaction' } });
    try {
      const { result: out, most } = await countingBackends(DB, pgInfo.user, () => runPgbench(['-n', '-M', 'prepared', '-c', '40', '-j', '2', '-t', '5'], small.port, 20_000, DB));
      expect(failedTransactions(out)).toBe(0);
      expect(processedTransactions(out)).toBe(200);
      // Never more than the pool's 10 at once (pg_stat_activity); with one worker never more than
      // 10 opened at all (with several, the budget moving between them closes and opens some).
      expect(most).toBeLessThanOrEqual(10);
      if (testWorkers === 1) expect(small.pooler.view().pools.find((r) => !r.virtual)?.connectsTotal).toBeLessThanOrEqual(10);
    } finally {
      await small.close();
    }
  }, 30_000);
});
