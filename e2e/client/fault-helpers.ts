// Shared by the client fault tests: a login role of their own in the run's Postgres (counting its
// rows in pg_stat_activity counts exactly the backends the test's pooler holds), and the check
// that pooler and Postgres agree on them with none left inside a transaction.
import { asSuperuser, createTestRole, dropTestRole } from '@quicpool/pg-fixture';
import type { TestRole } from '@quicpool/pg-fixture';
import type pg from 'pg';
import type { Pooler } from '@quicpool/pooler';
import { pgInfo } from './helpers.js';

export interface FaultRole extends TestRole {
  readonly database: string;
}

export const superuser = <T>(fn: (c: pg.Client) => Promise<T>): Promise<T> => asSuperuser(pgInfo, fn);

export async function createFaultRole(name: string): Promise<FaultRole> {
  return { ...(await createTestRole(pgInfo, name)), database: pgInfo.database };
}

export const dropFaultRole = (role: FaultRole): Promise<void> => dropTestRole(pgInfo, role);

export async function backendStates(user: string): Promise<(string | null)[]> {
  return superuser(async (c) => (await c.query<{ state: string | null }>(
    `select state from pg_stat_activity where usename = $1 and backend_type = 'client backend'`, [user])).rows.map((r) => r.state));
}

/** Server connections the pooler holds for `user`. */
export function poolBackends(pooler: Pooler, user: string): number {
  let n = 0;
  for (const p of pooler.stats().pools) if (p.user === user) n += p.idle + p.active + p.resetting + p.connecting;
  return n;
}

/** Pooler and Postgres agree on the role's backends, all idle, at most `poolSize`; no client left. */
export async function expectNoLeak(pooler: Pooler, user: string, poolSize: number, ms = 5_000): Promise<void> {
  let last = '';
  let states: (string | null)[] = [];
  const poll = async (): Promise<void> => {
    states = await backendStates(user);
  };
  await poll();
  const end = Date.now() + ms;
  for (;;) {
    const held = poolBackends(pooler, user);
    const clients = pooler.stats().clients;
    last = `pg ${states.length} [${states.join(',')}], pooler ${held}, clients ${clients}`;
    if (states.length === held && held <= poolSize && clients === 0 && states.every((s) => s === 'idle')) return;
    if (Date.now() > end) throw new Error(`backends of ${user} did not settle: ${last}`);
    await new Promise((r) => setTimeout(r, 50));
    await poll();
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
