// pgbench -M prepared and -M extended through the pooler in transaction mode: several clients over
// fewer backends, so each client's named statements ('P0_1' ...) are prepared on backends it did
// not prepare them on (pgbench 15 prepares lazily, inside the transaction). Zero failures. Skipped with a printed reason only when pgbench is missing.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPooler } from '../support/pooler-helpers.js';
import type { TestPooler } from '../support/pooler-helpers.js';
import { failedTransactions, pgbench, PGBENCH_MISSING, processedTransactions, runPgbench } from '../support/pgbench-helpers.js';
import { directClient } from './helpers.js';

if (pgbench === null) console.log(`fidelity pgbench test skipped: ${PGBENCH_MISSING}`);

const SCRIPT = `\\set aid random(1, 1000)
\\set delta random(-5000, 5000)
BEGIN;
UPDATE fid_bench SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM fid_bench WHERE aid = :aid;
END;
SELECT abalance FROM fid_bench WHERE aid = :aid;
`;

describe.skipIf(pgbench === null)('pgbench -M prepared / -M extended in transaction mode', () => {
  let p: TestPooler;
  let dir: string;
  beforeAll(async () => {
    p = await startPooler({ pool: { poolSize: 3, poolMode: 'transaction' } });
    dir = mkdtempSync(join(tmpdir(), 'quicpool-fid-pgbench-'));
    writeFileSync(join(dir, 'tx.sql'), SCRIPT);
    const d = await directClient();
    await d.query('drop table if exists fid_bench; create table fid_bench (aid int primary key, abalance int not null default 0); insert into fid_bench (aid) select generate_series(1, 1000)');
    await d.end();
  }, 30_000);
  afterAll(async () => {
    const d = await directClient();
    await d.query('drop table if exists fid_bench').catch(() => undefined);
    await d.end();
    await p.close();
    rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  it.each(['prepared', 'extended'])('-M %s: 8 clients over 3 backends, 1600 transactions, zero failures', async (mode) => {
    // One thread per client: this script's last SELECT is prepared outside a transaction, and the
    // first prepare of a text the pool has never seen needs a backend (fewer threads than clients:
    // test/pooling/pgbench.test.ts, with pgbench's own script).
    const out = await runPgbench(['-n', '-M', mode, '-c', '8', '-j', '8', '-t', '200', '-f', join(dir, 'tx.sql')], p.port);
    expect(failedTransactions(out)).toBe(0);
    expect(processedTransactions(out)).toBe(1600);
  }, 60_000);
});
