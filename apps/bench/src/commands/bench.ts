// `quicpool-bench bench` (`pnpm bench`, docs/benchmark.md): the scenarios, R rounds each; a line per second,
// then a summary and the report (report/write.ts). Each variant's client process is this program (`--bench-worker variant`).
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import type { PostgresServer } from '@quicpool/pg-fixture';
import { startPostgres } from '@quicpool/pg-fixture';
import { defineCommand } from '../command-line.js';
import { summaryLines, workerFigures, workerLines } from '../report/bench-terminal.js';
import { machineLine, describeMachine } from '../report/machine.js';
import { BENCH_OPTIONS, benchOptionsOf, workerCounts } from '../scenarios/bench-options.js';
import { runBench, type BenchOutcome } from '../scenarios/run-bench.js';
import type { BenchContext } from '../scenarios/run-variant.js';
import { steadyByScenario, steadyJson, steadyLines } from '../report/steady.js';
import { pgTargetOf } from '../stack/postgres.js';
import type { PgTarget } from '../stack/postgres.js';

const say = (line: string): void => void process.stdout.write(`${line}\n`);

/** One line per second per run: redrawn on a terminal, plain lines in logs and CI. */
function progressPrinter(tty: boolean): NonNullable<BenchContext['onRow']> {
  const seconds = new Map<string, number>();
  return (plan, variant, round, phased) => {
    const key = `${plan.name}/${variant.name} r${round}`;
    const second = (seconds.get(key) ?? 0) + 1;
    seconds.set(key, second);
    const r = phased.row;
    const mean = r.average_query_time_us === null ? '-' : (r.average_query_time_us / 1000).toFixed(1);
    const line = `[${key}] ${phased.phase} ${second}s offered ${r.offered_per_sec}/s processed ${r.number_of_queries_processed}/s active ${r.active_number_of_queries} failed ${r.failed_number_of_queries} mean ${mean} ms pooler ${r.pooler_cpu_milliseconds ?? '-'} ms/s`;
    process.stdout.write(tty ? `\r\x1b[2K${line}` : `${line}\n`);
  };
}

// The client processes run this program: a private copy of its folder keeps a run safe from a rebuild of dist/ (tsup
// cleans the folder first); under node_modules/.cache, its imports resolve exactly as from dist/.
function privateProgramCopy(program: string): { script: string; remove: () => void } {
  const dir = dirname(program);
  const cache = join(resolve(dir, '../..'), 'node_modules', '.cache');
  mkdirSync(cache, { recursive: true });
  const copy = mkdtempSync(join(cache, 'bench-run-'));
  for (const file of readdirSync(dir)) if (file.endsWith('.js')) copyFileSync(join(dir, file), join(copy, file));
  return { script: join(copy, basename(program)), remove: () => rmSync(copy, { recursive: true, force: true }) };
}

export const command = defineCommand({
  options: BENCH_OPTIONS,
  async run({ values, args, program }) {
    const o = benchOptionsOf(values, args);
    const counts = workerCounts(values.workers);
    const tty = process.stdout.isTTY === true;
    const startedAt = Date.now();
    const stamp = (line: string): void => say(`${tty ? '\r\x1b[2K' : ''}[+${((Date.now() - startedAt) / 1000).toFixed(1)}s] ${line}`);
    const progress = progressPrinter(tty);
    const copy = privateProgramCopy(program);
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
      if (values.pg === undefined) {
        server = await startPostgres({ settings: { max_connections: '200' } });
        pg = server.info;
        say(`postgres: embedded ${server.info.serverVersion} on ${pg.host}:${pg.port}`);
      } else {
        pg = pgTargetOf(values.pg);
        say(`postgres: ${values.pg.replace(/:[^:@/]*@/, ':***@')}`);
      }
      const outcomes: BenchOutcome[] = [];
      for (const workers of counts) {
        if (counts.length > 1) say(`--- quicpool with ${workers} worker${workers === 1 ? '' : 's'} ---`);
        const out = o.out === null || counts.length === 1 ? o.out : `${o.out}-w${workers}`;
        const outcome = await runBench({ ...o, workers, out }, { pg, script: copy.script, log: stamp, onRow: progress });
        outcomes.push(outcome);
        if (tty) process.stdout.write('\r\x1b[2K');
        const steady = o.steadyRate === null ? [] : [...steadyByScenario(outcome.results)].flatMap(([name, f]) => ['', ...steadyLines(name, f)]);
        const png = outcome.report.png;
        const pngLine = 'files' in png ? `png: ${png.files.join(', ')}` : `png: skipped: ${png.skipped}`;
        for (const line of ['', ...summaryLines(outcome.results), ...steady, '', `report: ${outcome.report.htmlFile}`, pngLine]) say(line);
      }
      await stop();
      const byWorkers = Object.fromEntries(outcomes.map((out, i) => [String(counts[i]), workerFigures(out.results)]));
      if (counts.length > 1) for (const line of workerLines(byWorkers, counts)) say(line);
      if (values.json) {
        const first = outcomes[0]!;
        const s = first.report.summary;
        const steady = o.steadyRate === null ? {} : steadyJson(steadyByScenario(first.results));
        say(JSON.stringify({ ...s.figures, ...steady, wanPath: first.setup.wanPath, congestionControl: first.setup.congestion, scale: first.scale, notAvailable: s.notAvailable, machine: s.machine, reportDir: first.report.dir, workers: byWorkers }));
      }
    } finally {
      await stop();
      copy.remove();
    }
  },
});

