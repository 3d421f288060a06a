// The per-pool query and byte totals (PoolStats, SHOW STATS): they move with real traffic through
// the pooler to the fixture's Postgres, by what each request and answer really was.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdminCommands, poolerAdminContext } from '../../src/index.js';
import type { PoolStats } from '../../src/index.js';
import { pgInfo, startPooler, withClient } from '../support/pooler-helpers.js';
import type { TestPooler } from '../support/pooler-helpers.js';

let p: TestPooler;
beforeAll(async () => {
  p = await startPooler({ pool: { poolSize: 2 } });
});
afterAll(async () => {
  await p.close();
});

function poolStats(): PoolStats {
  const s = p.pooler.stats().pools.find((x) => x.database === pgInfo.database && x.user === pgInfo.user);
  if (s === undefined) throw new Error('no pool for the fixture database yet');
  return s;
}

/** Size of a simple Query message: type byte, Int32 length, the text and its NUL. */
const querySize = (sql: string): number => 1 + 4 + Buffer.byteLength(sql) + 1;

describe('pool traffic totals', () => {
  it('count each request, the bytes from and to the client, and the time the server took', async () => {
    await withClient(p.clientConfig(), async (c) => {
      await c.query('select 1'); // the pool exists from here on
      const before = poolStats();

      // Simple queries: one request each, exactly the Query message's bytes from the client.
      const sql = 'select 2 as x';
      await c.query(sql);
      const one = poolStats();
      expect(one.queryCountTotal - before.queryCountTotal).toBe(1);
      expect(one.receivedBytesTotal - before.receivedBytesTotal).toBe(querySize(sql));
      const answer = one.sentBytesTotal - before.sentBytesTotal;
      expect(answer).toBeGreaterThan(0);
      await c.query(sql);
      const two = poolStats();
      expect(two.sentBytesTotal - one.sentBytesTotal).toBe(answer); // the same answer, the same bytes

      // A parameterised query (extended protocol up to Sync) is one request too.
      await c.query('select $1::int as y', [7]);
      const ext = poolStats();
      expect(ext.queryCountTotal - two.queryCountTotal).toBe(1);
      expect(ext.receivedBytesTotal).toBeGreaterThan(two.receivedBytesTotal);

      // The server's time is in the query time (µs).
      await c.query('select pg_sleep(0.05)');
      const slept = poolStats();
      expect(slept.queryTimeUsTotal - ext.queryTimeUsTotal).toBeGreaterThanOrEqual(50_000);

      // Inside a transaction the totals are added when the backend is given back (at COMMIT).
      await c.query('begin');
      await c.query('select 3');
      expect(poolStats().queryCountTotal).toBe(slept.queryCountTotal);
      await c.query('commit');
      expect(poolStats().queryCountTotal - slept.queryCountTotal).toBe(3);
    });
  });

  it('are added when a client leaves mid-transaction, and shown by SHOW STATS', async () => {
    const before = poolStats();
    const c = new pg.Client(p.clientConfig());
    c.on('error', () => undefined);
    await c.connect();
    await c.query('begin');
    await c.query('select 4');
    await c.end();
    await expect.poll(() => poolStats().queryCountTotal - before.queryCountTotal).toBe(2);
    const after = poolStats();
    expect(after.receivedBytesTotal - before.receivedBytesTotal).toBeGreaterThan(querySize('begin') + querySize('select 4'));

    const admin = createAdminCommands(poolerAdminContext(p.pooler, { pauseTimeoutMs: 0 }));
    const r = await admin.run('SHOW STATS');
    if (r.kind !== 'rows') throw new Error(`SHOW STATS answered ${r.kind}`);
    const names = r.columns.map((col) => col.name);
    const row = r.rows.find((x) => x[names.indexOf('database')] === pgInfo.database && x[names.indexOf('user')] === pgInfo.user);
    const col = (name: string): number => Number(row?.[names.indexOf(name)]);
    const now = poolStats();
    expect(col('total_query_count')).toBe(now.queryCountTotal);
    expect(col('total_received')).toBe(now.receivedBytesTotal);
    expect(col('total_sent')).toBe(now.sentBytesTotal);
    expect(col('total_query_time')).toBe(now.queryTimeUsTotal);
    expect(col('avg_query_time')).toBe(Math.round(now.queryTimeUsTotal / now.queryCountTotal));
    expect(col('total_xact_count')).toBeGreaterThanOrEqual(1);
  });
});
