import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rejection, startPooler, withClient } from '../support/pooler-helpers.js';
import type { TestPooler } from '../support/pooler-helpers.js';

let p: TestPooler;
beforeAll(async () => {
  p = await startPooler({ pool: { poolSize: 4 } });
});
afterAll(async () => {
  await p.close();
});

describe('node-postgres Client through the pooler over TCP', () => {
  it('runs simple and parameterised queries', async () => {
    await withClient(p.clientConfig(), async (c) => {
      expect((await c.query('select 1 as one')).rows).toEqual([{ one: 1 }]);
      expect((await c.query('select $1::int + $2::int as sum', [2, 3])).rows).toEqual([{ sum: 5 }]);
      expect((await c.query({ text: 'select $1::text as t', values: ['x'], rowMode: 'array' })).rows).toEqual([['x']]);
    });
  });

  it('commits and rolls back transactions', async () => {
    await withClient(p.clientConfig(), async (c) => {
      await c.query('create table if not exists tx_test (id int)');
      await c.query('truncate tx_test');
      await c.query('begin');
      await c.query('insert into tx_test values (1)');
      await c.query('commit');
      await c.query('begin');
      await c.query('insert into tx_test values (2)');
      await c.query('rollback');
      expect((await c.query('select id from tx_test order by id')).rows).toEqual([{ id: 1 }]);
      await c.query('drop table tx_test');
    });
  });

  it('reports an error inside a transaction with the server SQLSTATE, then recovers', async () => {
    await withClient(p.clientConfig(), async (c) => {
      await c.query('begin');
      expect((await rejection(c.query('select 1/0'))).code).toBe('22012');
      expect((await rejection(c.query('select 1'))).code).toBe('25P02');
      await c.query('rollback');
      expect((await c.query('select 2 as two')).rows).toEqual([{ two: 2 }]);
    });
  });

  it('returns a 10,000-row result and a 5 MB value', async () => {
    await withClient(p.clientConfig(), async (c) => {
      const r = await c.query('select g, md5(g::text) from generate_series(1, 10000) g');
      expect(r.rowCount).toBe(10000);
      expect(r.rows[9999]).toMatchObject({ g: 10000 });
      const big = 'x'.repeat(5 * 1024 * 1024);
      const echo = await c.query('select length($1::text) as n, $1::text as v', [big]);
      expect(echo.rows[0].n).toBe(big.length);
      expect(echo.rows[0].v === big).toBe(true);
    });
  });

  it('forwards notices to the session that caused them', async () => {
    await withClient(p.clientConfig(), async (c) => {
      const notices: string[] = [];
      c.on('notice', (n) => notices.push(n.message ?? ''));
      await c.query(`do $$ begin raise notice 'hello from %', 'plpgsql'; end $$`);
      expect(notices).toEqual(['hello from plpgsql']);
    });
  });
});
