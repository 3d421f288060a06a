// A login role of a test's own in the run's Postgres, with a table it may write: counting the
// role's rows in pg_stat_activity counts exactly the backends the test's pooler opened, whatever
// other test files run at the same time.
import pg from 'pg';
import type { PgConnectionInfo } from './postgres-server.js';

export interface TestRole {
  readonly user: string;
  readonly password: string;
  /** Table `<user>_rows (worker int, n int, who text)` the role may write. */
  readonly table: string;
}

/** Connects a pg.Client, runs `fn`, always ends the client. */
export async function withPgClient<T>(config: pg.ClientConfig, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client(config);
  c.on('error', () => undefined);
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end().catch(() => undefined);
  }
}

/** Runs `fn` on a direct superuser connection (bypassing any pooler). */
export function asSuperuser<T>(pg0: PgConnectionInfo, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  return withPgClient({ host: pg0.host, port: pg0.port, database: pg0.database, user: pg0.user, password: pg0.password }, fn);
}

/** Creates (or recreates) a SCRAM login role and its table; `name` must be unique per test file. */
export async function createTestRole(pg0: PgConnectionInfo, name: string): Promise<TestRole> {
  const role: TestRole = { user: name, password: `pw-${name}`, table: `${name}_rows` };
  await asSuperuser(pg0, async (c) => {
    await c.query(`select pg_terminate_backend(pid) from pg_stat_activity where usename = $1`, [name]);
    await c.query(`drop table if exists ${role.table}`);
    await c.query(`drop role if exists ${name}`);
    await c.query(`create role ${name} login password '${role.password}'`);
    await c.query(`create table ${role.table} (worker int not null, n int not null, who text not null)`);
    await c.query(`grant all on table ${role.table} to ${name}`);
  });
  return role;
}

export async function dropTestRole(pg0: PgConnectionInfo, role: TestRole): Promise<void> {
  await asSuperuser(pg0, async (c) => {
    await c.query(`select pg_terminate_backend(pid) from pg_stat_activity where usename = $1`, [role.user]);
    await c.query(`drop table if exists ${role.table}`);
    await c.query(`drop role if exists ${role.user}`);
  });
}
