import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { pgInfo, rejection, startPooler, withClient } from '../support/pooler-helpers.js';
import type { TestPooler } from '../support/pooler-helpers.js';

let p: TestPooler | undefined;
afterEach(async () => {
  await p?.close();
  p = undefined;
});

/** A direct connection to Postgres, bypassing the pooler. */
const direct = (): pg.ClientConfig => ({ host: pgInfo.host, port: pgInfo.port, database: pgInfo.database, user: pgInfo.user, password: pgInfo.password });

describe('backend health', () => {
  it('a backend that died while idle is detected by the health check and replaced', async () => {
    p = await startPooler({ pool: { poolSize: 1, serverCheckDelayMs: 0 } });
    await withClient(p.clientConfig(), async (c) => {
      const pid = (await c.query('select pg_backend_pid() as pid')).rows[0].pid as number;
      await withClient(direct(), (d) => d.query('select pg_terminate_backend($1)', [pid]));
      await new Promise((r) => setTimeout(r, 50));
      const again = (await c.query('select pg_backend_pid() as pid')).rows[0].pid as number;
      expect(again).not.toBe(pid);
    });
  });

  it('queryTimeoutMs closes a client whose query runs too long with 57014, and its backend', async () => {
    p = await startPooler({ pool: { poolSize: 1, queryTimeoutMs: 200 } });
    await withClient(p.clientConfig(), async (c) => {
      const e = await rejection(c.query('select pg_sleep(5)'));
      expect(e.code).toBe('57014');
    });
    await withClient(p.clientConfig(), async (c) => expect((await c.query('select 1 as ok')).rows[0].ok).toBe(1));
    expect(p.pooler.stats().pools[0]!.closedTotal).toBeGreaterThanOrEqual(1);
  });
});
