// Shared by the fault tests: a login role of their own (so counting its rows in pg_stat_activity
// counts exactly the backends the test's pooler opened, whatever other test files run at the same
// time), backend counts from both sides, and polling.
import { asSuperuser, createTestRole, dropTestRole } from '@quicpool/pg-fixture';
import type { PgConnectionInfo, TestRole } from '@quicpool/pg-fixture';
import type { Pooler } from '../../src/index.js';

export type FaultRole = TestRole;
export { asSuperuser as superuser, createTestRole as createFaultRole, dropTestRole as dropFaultRole };

export interface BackendRow {
  readonly pid: number;
  readonly state: string | null;
  readonly query: string;
}

/** The role's backends as Postgres sees them. */
export function backendsOf(pg0: PgConnectionInfo, user: string): Promise<BackendRow[]> {
  return asSuperuser(pg0, async (c) => (await c.query<BackendRow>(
    `select pid, state, query from pg_stat_activity where usename = $1 and backend_type = 'client backend' order by pid`, [user],
  )).rows);
}

/** Server connections the pooler holds for `user` (idle, active, resetting, connecting). */
export function poolBackends(pooler: Pooler, user: string): number {
  let n = 0;
  for (const p of pooler.stats().pools) if (p.user === user) n += p.idle + p.active + p.resetting + p.connecting;
  return n;
}

/** Polls `cond` every 25 ms, at most `ms`; the error names `what`. */
export async function until(what: string, cond: () => boolean | Promise<boolean>, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`not in time: ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * No leak: Postgres and the pooler agree on the role's backends, none of them is inside a
 * transaction, there are at most `poolSize`, and the pooler has no client left.
 */
export async function expectNoLeak(pg0: PgConnectionInfo, pooler: Pooler, user: string, poolSize: number, ms = 5_000): Promise<void> {
  let last = '';
  await until(`backends of ${user} settle`, async () => {
    const rows = await backendsOf(pg0, user);
    const held = poolBackends(pooler, user);
    const stats = pooler.stats();
    last = `pg ${rows.length} [${rows.map((r) => r.state).join(',')}], pooler ${held}, clients ${stats.clients}`;
    return rows.length === held && held <= poolSize && stats.clients === 0 && rows.every((r) => r.state === 'idle');
  }, ms).catch((e: Error) => {
    throw new Error(`${e.message}: ${last}`);
  });
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
