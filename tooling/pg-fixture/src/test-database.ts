// A database of a test's own in the run's Postgres: for tools that use fixed table names (pgbench's
// pgbench_accounts ...), so two test files that run them at the same time never share tables.
import type { PgConnectionInfo } from './postgres-server.js';
import { asSuperuser } from './test-role.js';

/** Creates (or recreates) database `name`; `name` must be unique per test file. */
export function createTestDatabase(pg0: PgConnectionInfo, name: string): Promise<void> {
  return asSuperuser(pg0, async (c) => {
    await c.query(`drop database if exists ${name} with (force)`);
    await c.query(`create database ${name}`);
  });
}

/** Drops database `name`, ending any session still in it. */
export async function dropTestDatabase(pg0: PgConnectionInfo, name: string): Promise<void> {
  await asSuperuser(pg0, (c) => c.query(`drop database if exists ${name} with (force)`));
}
