// `pnpm bench`: runs the benchmark scenarios, prints a line per second and a summary table, and
// writes bench-results/<timestamp>/ (CSVs, summary.json, report.html, report.png).
//   node dist/bin/bench.js [--quick] [--scenario NAME]... [--pg URL] [--out DIR] [--json] [--original-exact] [--no-png]
// Without --pg it starts an embedded Postgres and always stops it. With --json the last line printed
// is one JSON object of figures; scenarios that cannot run yet are null there, never invented.
import { parseArgs } from 'node:util';
import type { ClientConfig } from 'pg';
import type { PostgresServer } from '@quicpool/pg-fixture';
import { startPostgres } from '@quicpool/pg-fixture';
import { describeMachine, machineLine } from '../report/machine.js';
import { variantFigures } from '../report/figures.js';
import { writeReport } from '../report/write.js';
import { SCENARIOS, findScenario } from '../scenarios/registry.js';
import type { ProgressEvent, Scenario, ScenarioContext, ScenarioResult } from '../scenarios/types.js';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    scenario: { type: 'string', multiple: true },
    pg: { type: 'string' },
    out: { type: 'string' },
    json: { type: 'boolean', default: false },
    'original-exact': { type: 'boolean', default: false },
    'no-png': { type: 'boolean', default: false },
  },
});

const tty = process.stdout.isTTY === true;
const say = (line: string): void => {
  process.stdout.write(`${line}\n`);
};

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
        notes.push(`${result.name}: not available yet: needs ${result.needs}`);
        break;
      case 'capacity':
      case 'load':
        if (result.kind === 'capacity') {
          notes.push(`capacity: ${result.qps} queries/s (closed loop, best at ${result.bestSessions} sessions; steps ${result.steps.map((s) => `${s.sessions}:${s.qps}`).join(' ')})`);
        }
        for (const run of result.runs) {
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

async function main(): Promise<number> {
  const scenarios = selectScenarios(values.scenario);
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
    const ctx: ScenarioContext = {
      pg,
      quick: values.quick === true,
      originalExact: values['original-exact'] === true,
      onProgress: progress,
      log: (line) => say(`${tty ? '\r\x1b[2K' : ''}${line}`),
    };
    const results: ScenarioResult[] = [];
    for (const scenario of scenarios) {
      const result = await scenario.run(ctx);
      if (tty) process.stdout.write('\r\x1b[2K');
      if (result.kind === 'unavailable') say(`${scenario.name}: not available yet: needs ${result.needs}`);
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
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
