// Where pgbench is, if anywhere. The embedded Postgres ships no client tools, so pgbench comes from
// the machine's PostgreSQL (Debian: package postgresql-<major>); tests that need it skip with a
// printed reason when it is absent, benchmarks say so in their output.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** What to tell a user who has no pgbench. */
export const PGBENCH_MISSING = 'pgbench is not installed (Debian: apt-get install postgresql-15)';

function works(bin: string): boolean {
  try {
    execFileSync(bin, ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** pgbench on PATH, else in `pg_config --bindir`, else in Debian's /usr/lib/postgresql/<major>/bin. */
export function findPgbench(): string | null {
  if (works('pgbench')) return 'pgbench';
  const dirs: string[] = [];
  try {
    dirs.push(execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim());
  } catch {
    // no pg_config
  }
  const debian = '/usr/lib/postgresql';
  if (existsSync(debian)) for (const v of readdirSync(debian).sort().reverse()) dirs.push(join(debian, v, 'bin'));
  return dirs.map((d) => join(d, 'pgbench')).find((b) => existsSync(b) && works(b)) ?? null;
}

/** psql beside pgbench (Debian's client package ships both), else on PATH; null when neither. */
export function findPsql(): string | null {
  const pgbench = findPgbench();
  if (pgbench === 'pgbench' || pgbench === null) return works('psql') ? 'psql' : null;
  const p = join(dirname(pgbench), 'psql');
  return existsSync(p) && works(p) ? p : null;
}
