// Shared by the client fault tests: a login role of their own in the run's Postgres (counting its
// rows in pg_stat_activity counts exactly the backends the test's pooler holds), and the check
// that pooler and Postgres agree on them with none left inside a transaction.
import pg from 'pg';
import type { Pooler } from '@quicpool/pooler';
import { pgInfo } from './helpers.js';

export interface FaultRole {
  readonly user: string;
  readonly password: string;
  readonly database: string;
  /** Table `<user>_rows (worker int, n int, who text)`. */
  readonly table: string;
}

export async function superuser<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ host: pgInfo.host, port: pgInfo.port, database: pgInfo.database, user: pgInfo.user, password: pgInfo.password });
  c.on('error', () => undefined);
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end().catch(() => undefined);
  }
}

export async function createFaultRole(name: string): Promise<FaultRole> {
  const role: FaultRole = { user: name, password: `pw-${name}`, database: pgInfo.database, table: `${name}_rows` };
  await superuser(async (c) => {
    await c.query(`select pg_terminate_backend(pid) from pg_stat_activity where usename = $1`, [name]);
    await c.query(`drop table if exists ${role.table}`);
    await c.query(`drop role if exists ${name}`);
    await c.query(`create role ${name} login password '${role.password}'`);
    await c.query(`create table ${role.table} (worker int not null, n int not null, who text not null)`);
    await c.query(`grant all on table ${role.table} to ${name}`);
  });
  return role;
}

export async function dropFaultRole(role: FaultRole): Promise<void> {
  await superuser(async (c) => {
    await c.query(`select pg_terminate_backend(pid) from pg_stat_activity where usename = $1`, [role.user]);
    await c.query(`drop table if exists ${role.table}`);
    await c.query(`drop role if exists ${role.user}`);
  });
}

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
