// `pnpm bench`: runs the benchmark scenarios, prints a line per second and a summary table, and
// writes bench-results/<timestamp>/ (CSVs, summary.json, report.html, report.png).
//   node dist/bin/bench.js [--quick] [--scenario NAME]... [--pg URL] [--out DIR] [--json] [--original-exact] [--no-png]
//                          [--ramp START,END,SECONDS] [--delay-ms ONE_WAY]
// The same file is also every helper process of a run: `--bench-worker pooler|wan|variant <json>`.
// Without --pg it starts an embedded Postgres and always stops it. With --json the last line printed
// is one JSON object of figures; scenarios that cannot run yet are null there, never invented.
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ClientConfig } from 'pg';
import type { PostgresServer } from '@quicpool/pg-fixture';
import { startPostgres } from '@quicpool/pg-fixture';
import { parseCommandLine } from '../command-line.js';
import { describeMachine, machineLine } from '../report/machine.js';
import { variantFigures } from '../report/figures.js';
import { writeReport } from '../report/write.js';
import { SCENARIOS, findScenario } from '../scenarios/registry.js';
import { WORKER_FLAG } from '../scenarios/stack/child.js';
import type { PoolerWorkerConfig } from '../scenarios/stack/pooler-worker.js';
import { runPoolerWorker } from '../scenarios/stack/pooler-worker.js';
import type { VariantWorkerConfig } from '../scenarios/stack/variant-process.js';
import { runVariantWorker } from '../scenarios/stack/variant-worker.js';
import type { WanWorkerConfig } from '../scenarios/stack/wan-worker.js';
import { runWanWorker } from '../scenarios/stack/wan-worker.js';
import type { ProgressEvent, Scenario, ScenarioContext, ScenarioOverrides, ScenarioResult } from '../scenarios/types.js';

const OPTIONS = {
  options: {
    quick: { type: 'boolean', default: false },
    scenario: { type: 'string', multiple: true },
    pg: { type: 'string' },
    out: { type: 'string' },
    json: { type: 'boolean', default: false },
    'original-exact': { type: 'boolean', default: false },
    'no-png': { type: 'boolean', default: false },
    ramp: { type: 'string' },
    'delay-ms': { type: 'string' },
  },
} as const;
const say = (line: string): void => {
  process.stdout.write(`${line}\n`);
};
const workerAt = process.argv.indexOf(WORKER_FLAG);
const { values } = parseCommandLine('pnpm bench', workerAt >= 0 ? { ...OPTIONS, args: [] } : OPTIONS);

const tty = process.stdout.isTTY === true;

function selectScenarios(names: readonly string[] | undefined): Scenario[] {
  if (names === undefined || names.length === 0) return [...SCENARIOS];
  return names.map((name) => {
    const found = findScenario(name);
    if (found === undefined) {
      process.stderr.write(`unknown scenario '${name}'; known: ${SCENARIOS.map((s) => s.name).join(', ')}\n`);
      process.exit(2);
    }
    return found;
  });
}

const f1 = (v: number | null, div = 1): string => (v === null ? '-' : (v / div).toFixed(1));

/** One progress line per second: a redrawn bar on a terminal, plain lines in logs and CI. */
function progress(event: ProgressEvent): void {
  const r = event.row;
  const stats = `offered ${r.offered_per_sec}/s processed ${r.number_of_queries_processed}/s active ${r.active_number_of_queries} failed ${r.failed_number_of_queries} mean ${f1(r.average_query_time_us, 1000)} ms p99 ${f1(r.p99_us, 1000)} ms rss ${f1(r.memory_bytes, 2 ** 20)} MB`;
  const second = event.index + 1;
  if (!tty) {
    say(`[${event.scenario}/${event.variant}] ${second}s ${stats}`);
    return;
  }
  const width = 20;
  const done = Math.min(width, Math.round((second / Math.max(1, event.expectedRows)) * width));
  const bar = `${'#'.repeat(done)}${'.'.repeat(width - done)}`;
  // Rows past the ramp are the drain (answers still arriving), not more of the schedule.
  const where = second > event.expectedRows ? 'drain' : `${second}/${event.expectedRows}s`;
  process.stdout.write(`\r\x1b[2K[${event.scenario}/${event.variant}] [${bar}] ${where} ${stats}`);
}

function pad(cells: readonly string[], widths: readonly number[]): string {
  return cells.map((c, i) => c.padStart(widths[i] ?? 0)).join('  ');
}

function summaryTable(results: readonly ScenarioResult[]): string[] {
  const header = ['scenario', 'variant', 'sessions', 'offered', 'processed', 'failed', 'peak/s', 'mean@peak ms', 'p50 ms', 'p99 ms', 'rss MB'];
  const lines: string[][] = [header];
  const notes: string[] = [];
  for (const result of results) {
    switch (result.kind) {
      case 'unavailable':
        notes.push(`${result.name}: skipped: needs ${result.needs}`);
        break;
      case 'capacity':
      case 'lan':
      case 'load':
        if (result.kind === 'load') for (const note of result.notes ?? []) notes.push(`${result.name}: ${note}`);
        if (result.kind === 'lan') {
          const cell = (v: number | null | undefined): string => (v === null || v === undefined ? '-' : String(v));
          notes.push(`lan: our generator q/s ${Object.entries(result.tps).map(([k, v]) => `${k} ${cell(v)}`).join(', ')}`);
          if (result.pgbench !== null) notes.push(`lan: pgbench tps ${Object.entries(result.pgbench).map(([k, v]) => `${k} ${cell(v)}`).join(', ')}`);
          for (const note of result.notes) notes.push(`lan: ${note}`);
        }
        if (result.kind === 'capacity') {
          notes.push(`capacity: ${result.qps} queries/s (closed loop, best at ${result.bestSessions} sessions; steps ${result.steps.map((s) => `${s.sessions}:${s.qps}`).join(' ')})`);
        }
        for (const run of result.runs) {
          for (const error of run.errors ?? []) notes.push(`${run.scenario}/${run.variant} error: ${error}`);
          const f = variantFigures(run);
          lines.push([run.scenario, run.variant, String(f.sessions), String(f.offered), String(f.processed), String(f.failed), String(f.peakProcessedPerSec), f1(f.peakMeanLatencyMs), f.p50Ms.toFixed(2), f.p99Ms.toFixed(2), f.peakRssMB.toFixed(1)]);
        }
        break;
      default: {
        const never: never = result;
        throw new Error(`unknown result ${String(never)}`);
      }
    }
  }
  const widths = header.map((_, i) => Math.max(...lines.map((l) => (l[i] ?? '').length)));
  return [...lines.map((l) => pad(l, widths)), '', ...notes];
}

const startedAt = Date.now();

/**
 * The helper processes run this program's own file. A copy in a private folder keeps a run safe
 * from a rebuild of dist/ while it runs (tsup cleans the folder first); it sits under
 * node_modules/.cache so that its imports resolve exactly as from dist/.
 */
function privateScriptCopy(): { script: string; remove: () => void } {
  const here = fileURLToPath(import.meta.url);
  const dir = dirname(here);
  const root = resolve(dir, '../..');
  const cache = join(root, 'node_modules', '.cache');
  mkdirSync(cache, { recursive: true });
  const copy = mkdtempSync(join(cache, 'bench-run-'));
  for (const file of readdirSync(dir)) if (file.endsWith('.js')) copyFileSync(join(dir, file), join(copy, file));
  return { script: join(copy, basename(here)), remove: () => rmSync(copy, { recursive: true, force: true }) };
}

async function main(): Promise<number> {
  const scenarios = selectScenarios(values.scenario);
  const scriptCopy = privateScriptCopy();
  const machine = describeMachine();
  say(`quicpool bench${values.quick ? ' --quick' : ''}: ${scenarios.map((s) => s.name).join(', ')}`);
  say(`machine: ${machineLine(machine)}`);
  let server: PostgresServer | null = null;
  const stop = async (): Promise<void> => {
    const s = server;
    server = null;
    if (s !== null) await s.stop();
  };
  const onSignal = (): void => {
    void stop().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    let pg: ClientConfig;
    if (values.pg !== undefined) {
      pg = { connectionString: values.pg };
      say(`postgres: ${values.pg.replace(/:[^:@/]*@/, ':***@')}`);
    } else {
      server = await startPostgres();
      const info = server.info;
      pg = { host: info.host, port: info.port, user: info.user, password: info.password, database: info.database };
      say(`postgres: embedded ${info.serverVersion} on ${info.host}:${info.port}`);
    }
    const overrides: ScenarioOverrides = {};
    if (values.ramp !== undefined) {
      const [startRate, endRate, seconds] = values.ramp.split(',').map(Number);
      if (![startRate, endRate, seconds].every((n) => n !== undefined && Number.isFinite(n) && n >= 0)) throw new Error('--ramp wants START,END,SECONDS (e.g. 100,5000,30)');
      overrides.ramp = { startRate: startRate ?? 0, endRate: endRate ?? 0, durationMs: (seconds ?? 0) * 1000 };
    }
    if (values['delay-ms'] !== undefined) overrides.delayMs = Number(values['delay-ms']);
    const ctx: ScenarioContext = {
      overrides,
      pg,
      quick: values.quick === true,
      originalExact: values['original-exact'] === true,
      script: scriptCopy.script,
      onProgress: progress,
      log: (line) => say(`${tty ? '\r\x1b[2K' : ''}[+${((Date.now() - startedAt) / 1000).toFixed(1)}s] ${line}`),
    };
    const results: ScenarioResult[] = [];
    for (const scenario of scenarios) {
      const result = await scenario.run(ctx);
      if (tty) process.stdout.write('\r\x1b[2K');
      if (result.kind === 'unavailable') say(`${scenario.name}: skipped: needs ${result.needs}`);
      results.push(result);
    }
    await stop();
    const command = `bench ${process.argv.slice(2).join(' ')}`.trim();
    const report = await writeReport({ results, machine, command, ...(values.out === undefined ? {} : { dir: values.out }), png: values['no-png'] !== true });
    say('');
    for (const line of summaryTable(results)) say(line);
    say('');
    say(`report: ${report.htmlFile}`);
    say('file' in report.png ? `png: ${report.png.file}` : `png: skipped: ${report.png.skipped}`);
    if (values.json === true) {
      say(JSON.stringify({ ...report.summary.figures, notAvailable: report.summary.notAvailable, machine, reportDir: report.dir }));
    }
    return 0;
  } finally {
    await stop();
    scriptCopy.remove();
  }
}

async function worker(kind: string | undefined, json: string | undefined): Promise<void> {
  const config: unknown = JSON.parse(json ?? '{}');
  switch (kind) {
    case 'pooler':
      return runPoolerWorker(config as PoolerWorkerConfig);
    case 'wan':
      return runWanWorker(config as WanWorkerConfig);
    case 'variant':
      return runVariantWorker(config as VariantWorkerConfig);
    default:
      throw new Error(`unknown worker kind ${String(kind)}`);
  }
}

if (workerAt >= 0) {
  worker(process.argv[workerAt + 1], process.argv[workerAt + 2]).catch((error: unknown) => {
    process.stderr.write(`bench worker failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  });
} else {
  main().then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exit(1);
    },
  );
}
