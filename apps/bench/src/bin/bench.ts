// `pnpm bench`: does multiplexing beat TCP pooling for a client 30 ms away? Runs the scenarios
// over the packet-level WAN path (as root; else the relay, and the report says so), against the
// real quicpool daemon, R rounds each; prints a line per second and a summary; writes
// bench-results/<timestamp>/ (CSVs, summary.json, report.html, report.png, <scenario>.png).
// `--help` lists the options. With --json the last line printed is one JSON object of figures.
// The same file is the client process of every variant run: `--bench-worker variant <json>`.
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { cpus } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { PostgresServer } from '@quicpool/pg-fixture';
import { startPostgres } from '@quicpool/pg-fixture';
import { parseCommandLine } from '../command-line.js';
import type { CongestionControl } from '../netpath/netpath.js';
import { variantFigures } from '../report/figures.js';
import { machineLine, describeMachine } from '../report/machine.js';
import { SCENARIO_NAMES } from '../scenarios/plans.js';
import type { BenchOptions } from '../scenarios/run-bench.js';
import { runBench } from '../scenarios/run-bench.js';
import { WORKER_FLAG } from '../scenarios/run-variant.js';
import type { PhasedRow, ScenarioResult } from '../scenarios/types.js';
import type { ChildConfig } from '../scenarios/variant-child.js';
import { runVariantChild } from '../scenarios/variant-child.js';
import type { PgTarget } from '../stack/postgres.js';
import { pgTargetOf } from '../stack/postgres.js';

const OPTIONS = {
  options: {
    quick: { type: 'boolean', default: false },
    scenario: { type: 'string', multiple: true },
    rounds: { type: 'string' },
    pg: { type: 'string' },
    out: { type: 'string' },
    json: { type: 'boolean', default: false },
    'no-png': { type: 'boolean', default: false },
    'original-exact': { type: 'boolean', default: false },
    'seed-scale': { type: 'boolean', default: false },
    peak: { type: 'string' },
    steady: { type: 'string' },
    'delay-ms': { type: 'string', default: '15' },
    'ramp-seconds': { type: 'string' },
    'probe-seconds': { type: 'string', default: '2' },
    loss: { type: 'string', default: '0.01' },
    path: { type: 'string', default: 'auto' },
    'congestion-control': { type: 'string', default: 'cubic' },
    seed: { type: 'string', default: '1' },
    pgbouncer: { type: 'boolean', default: false },
    workers: { type: 'string', default: '1' },
  },
} as const;

const say = (line: string): void => void process.stdout.write(`${line}\n`);
const tty = process.stdout.isTTY === true;
const startedAt = Date.now();
const stamp = (line: string): void => say(`${tty ? '\r\x1b[2K' : ''}[+${((Date.now() - startedAt) / 1000).toFixed(1)}s] ${line}`);

function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(2);
}

function numberOf(name: string, value: string, min: number): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < min) fail(`--${name} wants a number >= ${min}, got ${value}`);
  return n;
}

/** `--workers 1,2`: the daemon's worker counts, each a whole run of the scenarios. */
function workerCounts(value: string): number[] {
  const counts = value.split(',').map((w) => Math.round(numberOf('workers', w, 1)));
  if (counts.some((w) => w > 256)) fail('--workers: at most 256 per count');
  return [...new Set(counts)];
}

function options(values: ReturnType<typeof parseCommandLine<typeof OPTIONS>>['values']): Omit<BenchOptions, 'workers'> {
  const scenarios = (values.scenario ?? [...SCENARIO_NAMES]).map((name) => {
    const found = SCENARIO_NAMES.find((s) => s === name);
    return found ?? fail(`unknown scenario '${name}'; known: ${SCENARIO_NAMES.join(', ')}`);
  });
  const path = values.path;
  if (path !== 'auto' && path !== 'packet' && path !== 'relay') fail('--path takes auto, packet or relay');
  const cc = values['congestion-control'];
  if (cc !== 'cubic' && cc !== 'reno' && cc !== 'bbr') fail('--congestion-control takes cubic, reno or bbr');
  const quick = values.quick === true;
  return {
    quick,
    originalExact: values['original-exact'] === true,
    seedScale: values['seed-scale'] === true,
    delayMs: numberOf('delay-ms', values['delay-ms'], 0),
    rampSeconds: numberOf('ramp-seconds', values['ramp-seconds'] ?? (quick ? '4' : '15'), 1),
    probeSeconds: numberOf('probe-seconds', values['probe-seconds'], 0),
    lossRate: numberOf('loss', values.loss, 0),
    steadyRate: values.steady === undefined ? null : numberOf('steady', values.steady, 1),
    pgbouncer: values.pgbouncer === true,
    scenarios,
    rounds: Math.round(numberOf('rounds', values.rounds ?? (quick ? '1' : '3'), 1)),
    peak: values.peak === undefined ? null : numberOf('peak', values.peak, 1),
    path,
    congestionControl: cc satisfies CongestionControl,
    seed: Math.round(numberOf('seed', values.seed, 0)),
    out: values.out ?? null,
    png: values['no-png'] !== true,
    command: `bench ${process.argv.slice(2).join(' ')}`.trim(),
  };
}

/** Per scenario and variant: the pooler's CPU per query at the busiest step (median over rounds), queries answered and failed. */
type WorkerFigures = Record<string, Record<string, { poolerUsPerQuery: number | null; processed: number; failed: number }>>;

function workerFigures(results: readonly ScenarioResult[]): WorkerFigures {
  const out: WorkerFigures = {};
  for (const r of results) {
    if (r.kind !== 'ran') continue;
    const variants: WorkerFigures[string] = {};
    for (const name of new Set(r.rounds.flat().map((run) => run.variant))) {
      const runs = r.rounds.flat().filter((run) => run.variant === name).map(variantFigures);
      const us = runs
        .map((f) => f.steps.filter((st) => st.label !== 'probe').reduce<(typeof f.steps)[number] | null>((best, st) => (best === null || st.qps > best.qps ? st : best), null)?.usPerQuery.pooler ?? null)
        .filter((x): x is number => x !== null)
        .sort((a, b) => a - b);
      variants[name] = {
        poolerUsPerQuery: us.length === 0 ? null : us.length % 2 === 1 ? us[us.length >> 1]! : (us[us.length / 2 - 1]! + us[us.length / 2]!) / 2,
        processed: runs.reduce((n, f) => n + f.processed, 0),
        failed: runs.reduce((n, f) => n + f.failed, 0),
      };
    }
    out[r.plan.name] = variants;
  }
  return out;
}

/** The worker counts side by side: pooler CPU per query of each against the first count's. */
function workerLines(by: Readonly<Record<string, WorkerFigures>>, counts: readonly number[]): string[] {
  const base = by[String(counts[0])] ?? {};
  const lines = ['', `quicpool by worker count (pooler CPU per query at the busiest step, median of rounds; against ${counts[0]} worker${counts[0] === 1 ? '' : 's'}):`];
  for (const [scenario, variants] of Object.entries(base)) {
    for (const [variant, b] of Object.entries(variants)) {
      if (b.poolerUsPerQuery === null) continue;
      const cells = counts.map((w) => {
        const v = by[String(w)]?.[scenario]?.[variant];
        if (v === undefined || v.poolerUsPerQuery === null) return `${w}: -`;
        return `${w}: ${v.poolerUsPerQuery.toFixed(0)} µs (${(v.poolerUsPerQuery / b.poolerUsPerQuery!).toFixed(2)}x), ${v.processed} answered, ${v.failed} failed`;
      });
      lines.push(`  ${scenario}/${variant}: ${cells.join('; ')}`);
    }
  }
  lines.push(`  (this machine has ${cpus().length} cores, shared by PostgreSQL, the load generator, the path and the pooler: more workers than that cannot show scaling here)`);
  return lines;
}

const seconds = new Map<string, number>();

/** One line per second: redrawn on a terminal, plain lines in logs and CI. */
function progress(scenario: string, variant: string, round: number, phased: PhasedRow): void {
  const key = `${scenario}/${variant} r${round}`;
  const second = (seconds.get(key) ?? 0) + 1;
  seconds.set(key, second);
  const r = phased.row;
  const mean = r.average_query_time_us === null ? '-' : (r.average_query_time_us / 1000).toFixed(1);
  const line = `[${key}] ${phased.phase} ${second}s offered ${r.offered_per_sec}/s processed ${r.number_of_queries_processed}/s active ${r.active_number_of_queries} failed ${r.failed_number_of_queries} mean ${mean} ms pooler ${r.pooler_cpu_milliseconds ?? '-'} ms/s`;
  process.stdout.write(tty ? `\r\x1b[2K${line}` : `${line}\n`);
}

function summaryLines(results: readonly ScenarioResult[]): string[] {
  const header = ['scenario', 'variant', 'sessions', 'offered', 'processed', 'failed', 'peak/s', 'mean@peak ms', 'p50 ms', 'p99 ms', 'rss MB', 'RTT ms'];
  const table: string[][] = [header];
  const notes: string[] = [];
  for (const r of results) {
    if (r.kind !== 'ran') {
      notes.push(r.kind === 'failed' ? `${r.name}: FAILED: ${r.error}` : `${r.name}: skipped: needs ${r.needs}`);
      continue;
    }
    notes.push(`${r.plan.name}: ${r.answer}${r.unstable.length > 0 ? ` [unstable: ${r.unstable.join(', ')}]` : ''}`);
    for (const note of r.notes) notes.push(`  ${note}`);
    for (const run of r.rounds[r.shownRound] ?? []) {
      const v = variantFigures(run);
      table.push([r.plan.name, run.variant, String(v.sessions), String(v.offered), String(v.processed), String(v.failed), String(v.peakProcessedPerSec), v.peakMeanLatencyMs?.toFixed(1) ?? '-', v.p50Ms.toFixed(2), v.p99Ms.toFixed(2), v.peakRssMB.toFixed(1), v.rttMs?.toFixed(2) ?? '-']);
    }
  }
  const widths = header.map((_, i) => Math.max(...table.map((l) => (l[i] ?? '').length)));
  return [...table.map((l) => l.map((c, i) => c.padStart(widths[i] ?? 0)).join('  ')), '', ...notes];
}

/**
 * The client processes run this program's own file (and the relay its sibling wan.js). A copy in a
 * private folder keeps a run safe from a rebuild of dist/ while it runs (tsup cleans the folder
 * first); it sits under node_modules/.cache so that its imports resolve exactly as from dist/.
 */
function privateScriptCopy(): { script: string; dir: string; remove: () => void } {
  const here = fileURLToPath(import.meta.url);
  const dir = dirname(here);
  const cache = join(resolve(dir, '../..'), 'node_modules', '.cache');
  mkdirSync(cache, { recursive: true });
  const copy = mkdtempSync(join(cache, 'bench-run-'));
  for (const file of readdirSync(dir)) if (file.endsWith('.js')) copyFileSync(join(dir, file), join(copy, file));
  return { script: join(copy, basename(here)), dir: copy, remove: () => rmSync(copy, { recursive: true, force: true }) };
}

async function main(): Promise<number> {
  const { values } = parseCommandLine('pnpm bench', OPTIONS);
  const o = options(values);
  const copy = privateScriptCopy();
  let server: PostgresServer | null = null;
  const stop = async (): Promise<void> => {
    const s = server;
    server = null;
    await s?.stop();
  };
  process.once('SIGINT', () => void stop().finally(() => process.exit(130)));
  process.once('SIGTERM', () => void stop().finally(() => process.exit(143)));
  try {
    say(`quicpool bench${o.quick ? ' --quick' : ''}: ${o.scenarios.join(', ')}, ${o.rounds} round(s)`);
    say(`machine: ${machineLine(describeMachine())}`);
    let pg: PgTarget;
    if (values.pg !== undefined) {
      pg = pgTargetOf(values.pg);
      say(`postgres: ${values.pg.replace(/:[^:@/]*@/, ':***@')}`);
    } else {
      server = await startPostgres({ settings: { max_connections: '200' } });
      pg = server.info;
      say(`postgres: embedded ${server.info.serverVersion} on ${pg.host}:${pg.port}`);
    }
    const counts = workerCounts(values.workers);
    const outcomes = new Map<number, Awaited<ReturnType<typeof runBench>>>();
    for (const workers of counts) {
      if (counts.length > 1) say(`--- quicpool with ${workers} worker${workers === 1 ? '' : 's'} ---`);
      const outcome = await runBench({ ...o, workers, out: o.out === null || counts.length === 1 ? o.out : `${o.out}-w${workers}` }, {
        pg,
        script: copy.script,
        wanScript: join(copy.dir, 'wan.js'),
        log: stamp,
        onRow: (plan, variant, round, row) => progress(plan.name, variant.name, round, row),
      });
      outcomes.set(workers, outcome);
      if (tty) process.stdout.write('\r\x1b[2K');
      say('');
      for (const line of summaryLines(outcome.results)) say(line);
      say('');
      say(`report: ${outcome.report.htmlFile}`);
      say('files' in outcome.report.png ? `png: ${outcome.report.png.files.join(', ')}` : `png: skipped: ${outcome.report.png.skipped}`);
    }
    await stop();
    const byWorkers = Object.fromEntries([...outcomes].map(([w, out]) => [String(w), workerFigures(out.results)]));
    if (counts.length > 1) for (const line of workerLines(byWorkers, counts)) say(line);
    if (values.json === true) {
      const first = outcomes.get(counts[0]!)!;
      const s = first.report.summary;
      say(JSON.stringify({ ...s.figures, wanPath: first.setup.wanPath, congestionControl: first.setup.congestion, scale: first.scale, notAvailable: s.notAvailable, machine: s.machine, reportDir: first.report.dir, workers: byWorkers }));
    }
    return 0;
  } finally {
    await stop();
    copy.remove();
  }
}

const workerAt = process.argv.indexOf(WORKER_FLAG);
if (workerAt >= 0) {
  const kind = process.argv[workerAt + 1];
  if (kind !== 'variant') fail(`unknown worker ${String(kind)}`);
  runVariantChild(JSON.parse(process.argv[workerAt + 2] ?? '{}') as ChildConfig).then(
    () => process.exit(0),
    (error: unknown) => {
      process.stderr.write(`bench client failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exit(1);
    },
  );
} else {
  main().then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exit(1);
    },
  );
}

