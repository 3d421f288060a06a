// Running pgbench (from the machine's PostgreSQL client tools) against one target and reading
// what it reports: tps and mean latency from its summary, p99 from its per-transaction log.
import { execFile } from 'node:child_process';
import { createReadStream, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { PgTarget } from '../stack/postgres.js';

export interface PgbenchResult {
  readonly tps: number;
  readonly transactions: number;
  readonly failed: number;
  readonly latencyMeanMs: number;
  /** From the per-transaction log; null when no log was asked for or it was empty. */
  readonly latencyP99Ms: number | null;
  readonly output: string;
}

export { findPgbench } from '@quicpool/pg-fixture';

export function runPgbench(bin: string, target: PgTarget, args: readonly string[], timeoutMs: number, sslmode = 'disable'): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      bin,
      ['-h', target.host, '-p', String(target.port), '-U', target.user, ...args, target.database],
      {
        env: { ...process.env, PGPASSWORD: target.password, PGSSLMODE: sslmode },
        timeout: timeoutMs,
        maxBuffer: 16 * 1024 * 1024,
      },
      (error, stdout, stderr) => (error ? reject(new Error(`pgbench ${args.join(' ')}: ${error.message}\n${stderr}`)) : resolve(stdout + stderr)),
    );
  });
}

const num = (re: RegExp, out: string): number => Number(re.exec(out)?.[1] ?? NaN);

/** The summary figures of a pgbench run. */
export function parseSummary(out: string): Omit<PgbenchResult, 'latencyP99Ms' | 'output'> {
  return {
    tps: num(/tps = ([\d.]+) \(without initial connection time\)/, out),
    transactions: num(/number of transactions actually processed: (\d+)/, out),
    failed: num(/number of failed transactions: (\d+)/, out) || 0,
    latencyMeanMs: num(/latency average = ([\d.]+) ms/, out),
  };
}

/** p99 of the latencies (µs, third column) in every per-transaction log file `prefix.*` in `dir`. */
export async function p99FromLogs(dir: string, prefix: string): Promise<number | null> {
  let values = new Float64Array(1 << 20);
  let n = 0;
  for (const file of readdirSync(dir).filter((f) => f.startsWith(`${prefix}.`))) {
    const lines = createInterface({ input: createReadStream(join(dir, file)), crlfDelay: Infinity });
    for await (const line of lines) {
      const third = line.split(' ', 3)[2];
      const us = Number(third);
      if (third === undefined || !Number.isFinite(us)) continue; // 'failed' / 'skipped' lines
      if (n === values.length) {
        const bigger = new Float64Array(values.length * 2);
        bigger.set(values);
        values = bigger;
      }
      values[n++] = us;
    }
  }
  if (n === 0) return null;
  const sorted = values.subarray(0, n).sort();
  return sorted[Math.min(n - 1, Math.ceil(n * 0.99) - 1)]! / 1000;
}
