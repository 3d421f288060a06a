import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../hostile/helpers.js';
import { ManualClock, turns } from '../support/manual-clock.js';
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
    // On a manual clock: the query is answered by the pooler's timer, when the test moves the clock.
    const QUERY_TIMEOUT_MS = 200;
    const clock = new ManualClock();
    p = await startPooler({ pool: { poolSize: 1, queryTimeoutMs: QUERY_TIMEOUT_MS } }, { clock });
    await withClient(p.clientConfig(), async (c) => {
      let answered = false;
      const failed = rejection(c.query('select pg_sleep(5)')).finally(() => (answered = true));
      // The query is out (Postgres sleeps on), its timer armed on the pooler's clock ...
      await eventually(() => clock.timersDue(clock.now() + QUERY_TIMEOUT_MS) === 1, 5000, 'query timer armed');
      // ... which does not fire a millisecond early ...
      clock.advance(QUERY_TIMEOUT_MS - 1);
      await turns();
      expect(answered).toBe(false);
      // ... and answers the client once it is due.
      clock.advance(1);
      const e = await failed;
      expect(e.code).toBe('57014');
    });
    await withClient(p.clientConfig(), async (c) => expect((await c.query('select 1 as ok')).rows[0].ok).toBe(1));
    expect(p.pooler.stats().pools[0]!.closedTotal).toBeGreaterThanOrEqual(1);
  });
});
