// `pnpm bench:lan`: pgbench -S on loopback, direct to Postgres, through the quicpool daemon (TCP) and through
// PgBouncer when installed (same pool size), in one run; per target tps, latency and the pooler's CPU per transaction.
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { findPgbench, startPostgres } from '@quicpool/pg-fixture';
import { describeMachine, load1, machineLine } from '../report/machine.js';
import { median } from '../report/median.js';
import { processSyscalls, readProcSample } from '../telemetry/proc.js';
import { p99FromLogs, parseSummary, runPgbench } from './pgbench.js';
import type { PgbenchSummary } from './pgbench.js';
import { findPgbouncer, startPgbouncer } from '../stack/pgbouncer.js';
import type { RunningPgbouncer } from '../stack/pgbouncer.js';
import { startDaemon } from '../stack/daemon.js';
import { startNodeForwarder } from './node-forwarder.js';
import type { RunningForwarder } from './node-forwarder.js';

export interface LanOptions {
  readonly durationS: number;
  /** Rounds of (direct, quicpool, PgBouncer), interleaved so slow drifts in load hit all alike. */
  readonly rounds: number;
  readonly warmupS: number;
  readonly clients: number;
  readonly jobs: number;
  readonly poolSize: number;
  readonly json: boolean;
  /** Folder for a --cpu-prof of the quicpool daemon, or null. */
  readonly profileDir: string | null;
  /** Extra Node flags for the quicpool daemon (e.g. --perf-basic-prof for `perf record`). */
  readonly workerFlags: readonly string[];
  /** pgbench -R: a fixed rate (tx/s) so CPU per transaction compares at equal load; null: as fast as possible. */
  readonly rate: number | null;
  /** Another build's quicpool CLI (its apps/pooler/dist/cli.js) measured as target 'quicpoolBaseline' in every round, or null. */
  readonly baseline: string | null;
  /** Which targets to measure (default: all three). */
  readonly targets: ReadonlySet<TargetName>;
  /** This program's own file (forked as the Node forwarder). */
  readonly script: string;
  /** quicpool's worker counts: a daemon each, measured in every round (the first is `quicpoolTcp`'s headline). */
  readonly workers: readonly number[];
}

export const SELECTABLE_TARGETS = ['direct', 'quicpoolTcp', 'pgbouncer', 'nodeForwarder', 'transportForwarder'] as const;
/** The selectable targets, and the `--baseline` build's daemon. */
export type TargetName = (typeof SELECTABLE_TARGETS)[number] | 'quicpoolBaseline';

export interface TargetRow extends PgbenchSummary {
  readonly target: TargetName;
  /** From pgbench's per-transaction log; null when it was empty. */
  readonly latencyP99Ms: number | null;
  /** quicpool's worker threads (null for the other targets). */
  readonly workers: number | null;
  readonly round: number;
  /** The pooler process's CPU per transaction (null for direct). */
  readonly cpuUsPerTx: number | null;
  /** Of which in user mode (the pooler's own code; the rest is the kernel's). */
  readonly userUsPerTx: number | null;
  /** Cores the pooler used on average during the run. */
  readonly cpuCores: number | null;
  /** quicpool's read() and write() syscalls per transaction (/proc/<pid>/io); null for the others. */
  readonly syscallsPerTx: { readonly reads: number; readonly writes: number } | null;
  readonly loadAvg1mBefore: number;
  readonly loadAvg1mAfter: number;
}

const log = (s: string): void => void process.stderr.write(`${s}\n`);

export async function runLan(o: LanOptions): Promise<void> {
  const pgbench = findPgbench();
  if (pgbench === null) throw new Error('pgbench is not installed (Debian: apt-get install postgresql-client); bench:lan needs it');
  const pgbouncerBin = findPgbouncer();
  if (pgbouncerBin === null) log('PgBouncer is not installed (apt-get install pgbouncer): its column stays empty');
  const machine = describeMachine();
  const pg = await startPostgres({ settings: { max_connections: String(Math.max(300, o.clients * 3)) } });
  const logDir = mkdtempSync(join(tmpdir(), 'quicpool-bench-lan-'));
  const rows: TargetRow[] = [];
  let pgbouncerVersion: string | null = null;
  try {
    const info = pg.info;
    const direct = { host: info.host, port: info.port, user: info.user, password: info.password, database: info.database };
    log(`pgbench -i -s 1 (direct) ...`);
    await runPgbench(pgbench, direct, ['-i', '-s', '1', '-q'], 120_000);
    const base = ['-S', '-c', String(o.clients), '-j', String(o.jobs), ...(o.rate === null ? [] : ['-R', String(o.rate)])];
    let round = 1;
    const measure = async (target: TargetName, port: number, pid: number | null, workers: number | null = null): Promise<void> => {
      const t = { ...direct, port };
      if (o.warmupS > 0) await runPgbench(pgbench, t, [...base, '-T', String(o.warmupS)], (o.warmupS + 60) * 1000);
      log(`round ${round}/${o.rounds}: pgbench -S -c ${o.clients} -j ${o.jobs} -T ${o.durationS} -> ${target}${workers === null ? '' : ` (${workers} worker${workers === 1 ? '' : 's'})`} ...`);
      const prefix = `${target}${workers === null ? '' : `-w${workers}`}-r${round}`;
      const before = load1();
      const cpu0 = pid === null ? null : readProcSample(pid);
      // /proc/<pid>/io counts read()/write() only: Node's; PgBouncer's recv()/send() would show 0.
      const countIo = target !== 'direct' && target !== 'pgbouncer' && pid !== null;
      const io0 = countIo ? processSyscalls(pid) : null;
      const started = process.hrtime.bigint();
      const out = await runPgbench(pgbench, t, [...base, '-T', String(o.durationS), '-l', `--log-prefix=${join(logDir, prefix)}`], (o.durationS + 60) * 1000);
      const elapsedUs = Number(process.hrtime.bigint() - started) / 1000;
      const cpu1 = pid === null ? null : readProcSample(pid);
      const io1 = countIo ? processSyscalls(pid) : null;
      const s = parseSummary(out);
      const cpu = cpu0 === null || cpu1 === null ? null : { us: (cpu1.cpuMs - cpu0.cpuMs) * 1000, userUs: (cpu1.userMs - cpu0.userMs) * 1000 };
      rows.push({
        target,
        workers,
        round,
        ...s,
        latencyP99Ms: await p99FromLogs(logDir, prefix),
        cpuUsPerTx: cpu !== null && s.transactions > 0 ? cpu.us / s.transactions : null,
        userUsPerTx: cpu !== null && s.transactions > 0 ? cpu.userUs / s.transactions : null,
        cpuCores: cpu !== null ? cpu.us / elapsedUs : null,
        syscallsPerTx: io0 !== null && io1 !== null && s.transactions > 0
          ? { reads: (io1.reads - io0.reads) / s.transactions, writes: (io1.writes - io0.writes) / s.transactions }
          : null,
        loadAvg1mBefore: before,
        loadAvg1mAfter: load1(),
      });
    };
    // The real daemon, TCP only (pgbench speaks no QUIC), as a user would start it.
    const daemon = (cli: string | undefined, nodeFlags: readonly string[], workers?: number) =>
      startDaemon({
        ...(workers === undefined ? {} : { workers }),
        listenHost: '127.0.0.1',
        upstream: { host: info.host, port: info.port },
        users: { [info.user]: { password: info.password } },
        poolSize: o.poolSize,
        stateDir: mkdtempSync(join(logDir, 'daemon-')),
        settings: { listen: { quic: false } },
        nodeFlags,
        ...(cli === undefined ? {} : { cli }),
      });
    const flags = [...(o.profileDir === null ? [] : ['--cpu-prof', `--cpu-prof-dir=${o.profileDir}`]), ...o.workerFlags];
    // One daemon per worker count, all running through the rounds (an idle one costs nothing).
    const qps = [];
    for (const w of o.workers) qps.push({ workers: w, d: await daemon(undefined, flags, w) });
    for (const q of qps) log(`quicpool daemon (${q.workers} worker${q.workers === 1 ? '' : 's'}) pid ${q.d.pid}`);
    // The baseline build runs as many workers as the first quicpool daemon (its own default would be every core).
    const baselineWorker = o.baseline === null ? null : await daemon(o.baseline, o.workerFlags, o.workers[0]);
    const forwarders: [TargetName, RunningForwarder][] = [];
    for (const [target, kind] of [['nodeForwarder', 'net'], ['transportForwarder', 'transport']] as const) {
      if (o.targets.has(target)) forwarders.push([target, await startNodeForwarder(o.script, { host: info.host, port: info.port, kind })]);
    }
    let pb: RunningPgbouncer | null = null;
    try {
      const pooled = { serverHost: info.host, serverPort: info.port, user: info.user, password: info.password, poolSize: o.poolSize };
      pb = pgbouncerBin === null || !o.targets.has('pgbouncer') ? null : await startPgbouncer(pgbouncerBin, pooled);
      pgbouncerVersion = pb?.version ?? null;
      for (; round <= o.rounds; round++) {
        if (o.targets.has('direct')) await measure('direct', info.port, null);
        // A/B in ABBA order (the baseline first in even rounds): a drift of the machine within
        // a round does not favour whichever daemon is measured first.
        const baselineFirst = baselineWorker !== null && round % 2 === 0;
        if (baselineFirst) await measure('quicpoolBaseline', baselineWorker.tcpPort, baselineWorker.pid);
        if (o.targets.has('quicpoolTcp')) for (const q of qps) await measure('quicpoolTcp', q.d.tcpPort, q.d.pid, q.workers);
        if (baselineWorker !== null && !baselineFirst) await measure('quicpoolBaseline', baselineWorker.tcpPort, baselineWorker.pid);
        if (pb !== null) await measure('pgbouncer', pb.port, pb.pid);
        for (const [target, fw] of forwarders) await measure(target, fw.port, fw.pid);
      }
    } finally {
      await pb?.stop();
      for (const q of qps) await q.d.stop();
      await baselineWorker?.stop();
      for (const [, fw] of forwarders) await fw.stop();
    }
  } finally {
    rmSync(logDir, { recursive: true, force: true });
    await pg.stop();
  }
  report(o, rows, machineLine(machine), pgbouncerVersion);
}

function report(o: LanOptions, rows: readonly TargetRow[], machine: string, pgbouncerVersion: string | null): void {
  const first = o.workers[0] ?? 1;
  // quicpoolTcp's headline figures are those of the first worker count.
  const of = (t: TargetName, workers: number = first) => rows.filter((r) => r.target === t && (t !== 'quicpoolTcp' || r.workers === workers));
  const med = (t: TargetName, get: (r: TargetRow) => number | null, workers = first): number | null => median(of(t, workers).map(get));
  const cpu = (r: TargetRow): number | null => r.cpuUsPerTx;
  const f = (x: number | null | undefined, d: number) => (x === null || x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(d));
  const list = (xs: readonly (number | null)[]): string => xs.map((x) => f(x, 2)).join(', ');
  const workersText = (w: number): string => `${w} worker${w === 1 ? '' : 's'}`;
  const name = (r: TargetRow) =>
    r.target === 'pgbouncer' && pgbouncerVersion !== null ? `pgbouncer (${pgbouncerVersion})` : r.workers === null || o.workers.length === 1 ? r.target : `${r.target} ${r.workers}w`;
  const lines = [
    `bench:lan  pgbench -S -c ${o.clients} -j ${o.jobs} -T ${o.durationS}${o.rate === null ? '' : ` -R ${o.rate}`} (simple protocol), pool size ${o.poolSize}, transaction pooling, ${o.rounds} round(s)`,
    machine,
    '',
    '| round | target | tps | mean latency ms | p99 latency ms | failed | pooler CPU µs/tx | of which user | pooler cores | read+write syscalls/tx (Node) | load avg 1m before/after |',
    '| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
    ...rows.map((r) =>
      `| ${r.round} | ${name(r)} | ${f(r.tps, 0)} | ${f(r.latencyMeanMs, 3)} | ${f(r.latencyP99Ms, 3)} | ${r.failed} | ${f(r.cpuUsPerTx, 1)} | ${f(r.userUsPerTx, 1)} | ${f(r.cpuCores, 2)} | ${r.syscallsPerTx === null ? '-' : `${f(r.syscallsPerTx.reads, 2)}+${f(r.syscallsPerTx.writes, 2)}`} | ${r.loadAvg1mBefore} / ${r.loadAvg1mAfter} |`),
    '',
  ];
  // The ratio of each round (same conditions, measured back to back), then their median.
  const byRound = (nums: readonly TargetRow[], dens: readonly TargetRow[], get: (r: TargetRow) => number | null) =>
    nums.map((a) => {
      const b = dens.find((r) => r.round === a.round);
      const x = get(a);
      const y = b === undefined ? null : get(b);
      return x !== null && y !== null && y > 0 ? x / y : null;
    });
  const ratios = byRound(of('quicpoolTcp'), of('pgbouncer'), (r) => r.tps);
  const ratio = median(ratios);
  lines.push(ratio === null
    ? `quicpool / PgBouncer tps: - (${!o.targets.has('quicpoolTcp') ? 'quicpool not measured' : !o.targets.has('pgbouncer') ? 'PgBouncer not measured' : 'PgBouncer not installed'})`
    : `quicpool / PgBouncer tps: ${ratio.toFixed(2)}x${o.rounds > 1 ? ` (median of rounds: ${list(ratios)})` : ''}`);
  // Pooler CPU per transaction, quicpool over PgBouncer: medians of the rounds.
  const cpuQ = med('quicpoolTcp', cpu);
  const cpuP = med('pgbouncer', cpu);
  if (cpuQ !== null && cpuP !== null && cpuP > 0) {
    const x = cpuQ / cpuP;
    lines.push(`quicpool / PgBouncer pooler CPU per transaction: ${x.toFixed(2)}x (${f(cpuQ, 1)} vs ${f(cpuP, 1)} µs, medians of rounds)`);
  }
  if (o.baseline !== null) {
    const bRatios = byRound(of('quicpoolBaseline'), of('pgbouncer'), (r) => r.tps);
    const abRatios = byRound(of('quicpoolTcp'), of('quicpoolBaseline'), cpu);
    const abUser = byRound(of('quicpoolTcp'), of('quicpoolBaseline'), (r) => r.userUsPerTx);
    lines.push(`quicpoolBaseline (${o.baseline}) / PgBouncer tps: ${f(median(bRatios), 2)}x; pooler CPU µs/tx (median) quicpoolTcp ${f(cpuQ, 1)} vs quicpoolBaseline ${f(med('quicpoolBaseline', cpu), 1)}`);
    lines.push(`quicpoolTcp / quicpoolBaseline CPU per transaction by round: ${list(abRatios)} (median ${f(median(abRatios), 2)}); user time only: ${list(abUser)} (median ${f(median(abUser), 2)})`);
  }
  const references: readonly [TargetName, string][] = [
    ['nodeForwarder', 'bytes piped 1:1 by net.Socket'],
    ['transportForwarder', "bytes piped 1:1 through the transport's readInto and writeChunk"],
  ];
  for (const [t, how] of references) {
    const us = med(t, cpu);
    if (us === null) continue;
    const forPgbouncer = cpuP === null ? '' : `, ${f(us / cpuP, 2)}x PgBouncer's`;
    lines.push(`${t} (reference: no pooling, ${how}): ${f(med(t, (r) => r.tps), 0)} tps, ${f(us, 1)} µs/tx (user ${f(med(t, (r) => r.userUsPerTx), 1)})${forPgbouncer}; quicpool's CPU per transaction is ${cpuQ === null ? '-' : f(cpuQ / us, 2)}x that of this Node.js process that only moves the bytes`);
  }
  const perWorkers = Object.fromEntries(o.workers.map((w) => [String(w), {
    tps: med('quicpoolTcp', (r) => r.tps, w),
    cpuUsPerTx: med('quicpoolTcp', cpu, w),
    cpuCores: med('quicpoolTcp', (r) => r.cpuCores, w),
  }]));
  if (o.workers.length > 1 && o.targets.has('quicpoolTcp')) {
    lines.push('', `quicpool by worker count (medians of rounds; ratios against ${workersText(first)}, each round's pair measured back to back):`);
    for (const w of o.workers) {
      const cpuRatios = byRound(of('quicpoolTcp', w), of('quicpoolTcp', first), cpu);
      const tpsRatios = byRound(of('quicpoolTcp', w), of('quicpoolTcp', first), (r) => r.tps);
      const p = perWorkers[String(w)]!;
      lines.push(`  ${workersText(w)}: ${f(p.tps, 0)} tps, ${f(p.cpuUsPerTx, 1)} µs CPU per transaction, ${f(p.cpuCores, 2)} cores; CPU/tx ${f(median(cpuRatios), 2)}x, tps ${f(median(tpsRatios), 2)}x`);
    }
    lines.push(`  (this machine has ${cpus().length} cores, shared by PostgreSQL, pgbench and the pooler: more workers than cores cannot show scaling here)`);
  }
  process.stdout.write(`${lines.join('\n')}\n`);
  if (!o.json) return;
  const pick = (get: (r: TargetRow) => number | null) => Object.fromEntries(SELECTABLE_TARGETS.map((t) => [t, med(t, get)]));
  process.stdout.write(`${JSON.stringify({
    bench: 'lan',
    statistic: o.rounds > 1 ? 'median of rounds' : 'single round',
    tps: pick((r) => r.tps),
    latencyMeanMs: pick((r) => r.latencyMeanMs),
    latencyP99Ms: pick((r) => r.latencyP99Ms),
    failed: pick((r) => r.failed),
    cpuUsPerTx: { quicpool: cpuQ, pgbouncer: cpuP, nodeForwarder: med('nodeForwarder', cpu), transportForwarder: med('transportForwarder', cpu) },
    cpuCores: { quicpool: med('quicpoolTcp', (r) => r.cpuCores), pgbouncer: med('pgbouncer', (r) => r.cpuCores) },
    quicpoolVsPgbouncerTps: ratio,
    workers: perWorkers,
    baseline: o.baseline === null ? null : { module: o.baseline, tps: med('quicpoolBaseline', (r) => r.tps), cpuUsPerTx: med('quicpoolBaseline', cpu) },
    quicpoolVsPgbouncerTpsByRound: ratios,
    rounds: rows,
    config: { durationS: o.durationS, rounds: o.rounds, clients: o.clients, jobs: o.jobs, poolSize: o.poolSize, pgbouncer: pgbouncerVersion, workers: o.workers },
    machine,
  })}\n`);
}
