// vitest global setup: one real Postgres for the whole test run, handed to every test file through
// `inject('pg')`, and stopped at the end whatever happened (the watchdog covers a killed runner).
import type { TestProject } from 'vitest/node';
import { startPostgres } from './postgres-server.js';
import './vitest-context.js';

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const started = Date.now();
  const server = await startPostgres();
  project.provide('pg', server.info);
  if (process.env.QUICPOOL_FIXTURE_VERBOSE) {
    console.log(`[pg-fixture] PostgreSQL ${server.info.serverVersion} on ${server.info.host}:${server.info.port} in ${Date.now() - started} ms`);
  }
  return () => server.stop();
}
