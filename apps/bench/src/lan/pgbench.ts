// Runs pgbench (the machine's client tools) against one target: tps and mean latency from its summary, p99 from its log.
import { execFile } from 'node:child_process';
import { createReadStream, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { PgTarget } from '../stack/postgres.js';

export type PgbenchSummary = ReturnType<typeof parseSummary>;

export function runPgbench(bin: string, target: PgTarget, args: readonly string[], timeoutMs: number, sslmode = 'disable'): Promise<string> {
  const argv = ['-h', target.host, '-p', String(target.port), '-U', target.user, ...args, target.database];
  const env = { ...process.env, PGPASSWORD: target.password, PGSSLMODE: sslmode };
  return new Promise((resolve, reject) => {
    execFile(bin, argv, { env, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) =>
      error ? reject(new Error(`pgbench ${args.join(' ')}: ${error.message}\n${stderr}`)) : resolve(stdout + stderr));
  });
}

const num = (re: RegExp, out: string): number => Number(re.exec(out)?.[1] ?? NaN);

/** The summary figures of a pgbench run; with -C its tps line is "tps = N (including reconnection times)". */
export function parseSummary(out: string) {
  const tps = num(/tps = ([\d.]+) \(without initial connection time\)/, out);
  return {
    tps: Number.isNaN(tps) ? num(/tps = ([\d.]+)/, out) : tps,
    transactions: num(/number of transactions actually processed: (\d+)/, out),
    failed: num(/number of failed transactions: (\d+)/, out) || 0,
    latencyMeanMs: num(/latency average = ([\d.]+) ms/, out),
  };
}

/** p99 of the latencies (µs, third column) in every per-transaction log file `prefix.*` in `dir`. */
export async function p99FromLogs(dir: string, prefix: string): Promise<number | null> {
  const values: number[] = [];
  for (const file of readdirSync(dir).filter((f) => f.startsWith(`${prefix}.`))) {
    const lines = createInterface({ input: createReadStream(join(dir, file)), crlfDelay: Infinity });
    for await (const line of lines) {
      const third = line.split(' ', 3)[2];
      const us = Number(third);
      if (third !== undefined && Number.isFinite(us)) values.push(us); // not 'failed' / 'skipped' lines
    }
  }
  const n = values.length;
  if (n === 0) return null;
  const sorted = Float64Array.from(values).sort();
  return sorted[Math.min(n - 1, Math.ceil(n * 0.99) - 1)]! / 1000;
}
