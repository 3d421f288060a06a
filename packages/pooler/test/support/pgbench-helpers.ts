// pgbench through a test pooler: where it is, how to run it, and how to read its summary.
import { execFile } from 'node:child_process';
import { findPgbench, PGBENCH_MISSING } from '@quicpool/pg-fixture';
import { pgInfo } from './pooler-helpers.js';

export const pgbench = findPgbench();
export { PGBENCH_MISSING };

/**
 * Runs pgbench against the pooler on `port` as the fixture's superuser, in `database` (one of the
 * test file's own when it initializes pgbench's tables); resolves with its output.
 * pgbench is killed (and the promise rejects) after `timeoutMs`: a hang fails instead of lingering.
 */
export function runPgbench(args: string[], port: number, timeoutMs = 60_000, database: string = pgInfo.database): Promise<string> {
  const bin = pgbench;
  if (bin === null) return Promise.reject(new Error(PGBENCH_MISSING));
  return new Promise((resolve, reject) => {
    execFile(
      bin,
      ['-h', '127.0.0.1', '-p', String(port), '-U', pgInfo.user, ...args, database],
      { env: { ...process.env, PGPASSWORD: pgInfo.password, PGSSLMODE: 'disable' }, timeout: timeoutMs },
      (error, stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stdout}\n${stderr}`)) : resolve(stdout + stderr)),
    );
  });
}

export const failedTransactions = (out: string): number => Number(/number of failed transactions: (\d+)/.exec(out)?.[1] ?? NaN);
export const processedTransactions = (out: string): number =>
  Number(/number of transactions actually processed: (\d+)/.exec(out)?.[1] ?? NaN);
