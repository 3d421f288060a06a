// postgres.js (prepares every query under its own name and pipelines them) through the pooler in
// transaction mode, over TCP and QUIC: hundreds of concurrent queries, sql.begin, errors inside
// pipelines, LISTEN/NOTIFY.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFidelityPooler } from './helpers.js';
import type { FidelityPooler, Via } from './helpers.js';

let p: FidelityPooler;
beforeAll(async () => {
  p = await startFidelityPooler({ poolSize: 4 });
});
afterAll(async () => p.close());

describe.each<Via>(['tcp', 'quic'])('postgres.js over %s', (via) => {
  it('runs 400 concurrent prepared queries over 8 client connections and 4 backends', async () => {
    const sql = p.sql(via, { max: 8 });
    try {
      const rs = await Promise.all(Array.from({ length: 400 }, (_, i) => sql`select ${i}::int + 1 as n, ${`t${i % 7}`}::text as t`));
      rs.forEach((r, i) => {
        expect(r[0]?.n).toBe(i + 1);
        expect(r[0]?.t).toBe(`t${i % 7}`);
      });
    } finally {
      await sql.end();
    }
  }, 30_000);

  it('keeps transactions (sql.begin) on one backend, and rolls back on error', async () => {
    const sql = p.sql(via, { max: 4 });
    const table = `fid_pjs_${via}`;
    try {
      await sql.unsafe(`drop table if exists ${table}; create table ${table} (id int primary key, v text)`);
      await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          sql.begin(async (tx) => {
            const [a] = await tx`select pg_backend_pid() as pid`;
            await tx`insert into ${tx(table)} values (${i}, ${`v${i}`})`;
            const [b] = await tx`select pg_backend_pid() as pid`;
            expect(b?.pid).toBe(a?.pid);
          }),
        ),
      );
      const failed = await sql
        .begin(async (tx) => {
          await tx`insert into ${tx(table)} values (100, 'x')`;
          await tx`insert into ${tx(table)} values (1, 'duplicate')`;
        })
        .catch((e: { code?: string }) => e);
      expect((failed as { code?: string }).code).toBe('23505');
      const [count] = await sql`select count(*)::int as n from ${sql(table)}`;
      expect(count?.n).toBe(20);
    } finally {
      await sql.unsafe(`drop table if exists ${table}`).catch(() => undefined);
      await sql.end();
    }
  }, 30_000);

  it('an error inside a pipeline fails that query only; the others answer in order', async () => {
    const sql = p.sql(via, { max: 1 });
    try {
      const results = await Promise.allSettled([
        sql`select 1 as n`,
        sql`select 1 / ${0}::int as boom`,
        sql`select 3 as n`,
        sql`select * from no_such_table_fid`,
        sql`select 5 as n`,
      ]);
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'rejected', 'fulfilled']);
      expect(results.map((r) => (r.status === 'fulfilled' ? r.value[0]?.n : (r.reason as { code?: string }).code))).toEqual([1, '22012', 3, '42P01', 5]);
      // The same statements again: prepared by now, on whichever backend.
      const again = await Promise.all([sql`select 1 as n`, sql`select 3 as n`]);
      expect(again.map((r) => r[0]?.n)).toEqual([1, 3]);
    } finally {
      await sql.end();
    }
  }, 30_000);

  it('sql.listen keeps receiving notifications (the listening session is pinned)', async () => {
    const sql = p.sql(via, { max: 2 });
    const other = p.sql(via, { max: 2 });
    const got: string[] = [];
    try {
      const channel = `fid_${via}`;
      await sql.listen(channel, (payload) => got.push(payload));
      for (let i = 0; i < 5; i++) {
        await other.notify(channel, `m${i}`);
        await other`select pg_sleep(0.01)`; // other clients keep using the remaining backends
      }
      for (let i = 0; i < 100 && got.length < 5; i++) await new Promise((r) => setTimeout(r, 20));
      expect(got).toEqual(['m0', 'm1', 'm2', 'm3', 'm4']);
    } finally {
      await sql.end();
      await other.end();
    }
  }, 30_000);
});
