// pgbench (from the machine's PostgreSQL client tools) through the pooler: -S and a custom
// script, a few seconds each, zero failed transactions. Skipped with a printed reason only when
// pgbench is not installed.
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pgInfo, startPooler } from './pooler-helpers.js';
import type { TestPooler } from './pooler-helpers.js';

/** pgbench on PATH, else in `pg_config --bindir`, else in Debian's /usr/lib/postgresql/<major>/bin. */
function findPgbench(): string | null {
  const works = (bin: string): boolean => {
    try {
      execFileSync(bin, ['--version'], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  };
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
const pgbench = findPgbench();
if (pgbench === null) console.log('pgbench test skipped: pgbench is not installed (apt-get install postgresql-client)');

function run(args: string[], port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      pgbench!,
      ['-h', '127.0.0.1', '-p', String(port), '-U', pgInfo.user, ...args, pgInfo.database],
      { env: { ...process.env, PGPASSWORD: pgInfo.password, PGSSLMODE: 'disable' }, timeout: 60_000 },
      (error, stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout + stderr)),
    );
  });
}

const failed = (out: string): number => Number(/number of failed transactions: (\d+)/.exec(out)?.[1] ?? NaN);
const processed = (out: string): number => Number(/number of transactions actually processed: (\d+)/.exec(out)?.[1] ?? NaN);

describe.skipIf(pgbench === null)('pgbench through the pooler', () => {
  let p: TestPooler;
  let dir: string;
  beforeAll(async () => {
    p = await startPooler({ pool: { poolSize: 5 } });
    dir = mkdtempSync(join(tmpdir(), 'quicpool-pgbench-'));
    await run(['-i', '-s', '1', '-q'], p.port); // COPY and VACUUM go through the pooler too
  }, 60_000);
  afterAll(async () => {
    await run(['-i', '-I', 'd'], p.port).catch(() => undefined);
    await p.close();
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('runs -S with 20 clients for 3 s with zero failed transactions', async () => {
    const out = await run(['-S', '-c', '20', '-j', '2', '-T', '3', '-M', 'extended'], p.port);
    expect(failed(out)).toBe(0);
    expect(processed(out)).toBeGreaterThan(100);
  }, 30_000);

  it('runs a custom script (transactions with writes) for 3 s with zero failed transactions', async () => {
    const script = join(dir, 'custom.sql');
    writeFileSync(
      script,
      ['\\set aid random(1, 100000)', '\\set delta random(-5000, 5000)', 'BEGIN;',
        'UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;',
        'SELECT abalance FROM pgbench_accounts WHERE aid = :aid;', 'END;'].join('\n'),
    );
    const out = await run(['-f', script, '-c', '10', '-j', '2', '-T', '3'], p.port);
    expect(failed(out)).toBe(0);
    expect(processed(out)).toBeGreaterThan(50);
  }, 30_000);
});
