// Writes one benchmark run to bench-results/<timestamp>/: a CSV per variant and round, summary.json
// (the same figures the --json line prints), report.html, and with Chromium report.png (the
// headline: question, answers, six panels) and one <scenario>.png per scenario.
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { ScenarioResult, VariantRun } from '../scenarios/types.js';
import { toCsv } from '../telemetry/csv.js';
import { captureElements } from './chromium.js';
import { rttOf, variantFigures } from './figures.js';
import type { ReportData, SetupFacts } from './html.js';
import { WIDTH, inReadingOrder, renderReport } from './html.js';
import type { MachineDescription } from './machine.js';

export type WrittenReport = Awaited<ReturnType<typeof writeReport>>;

const csvName = (run: VariantRun): string => `${run.scenario}-${run.variant}-round${run.round}.csv`;

/** A scenario's JSON: its medians by name next to one entry per variant (the charted round's). */
function scenarioFigures(r: Extract<ScenarioResult, { kind: 'ran' }>): Record<string, unknown> {
  const shown = r.rounds[r.shownRound] ?? [];
  const out: Record<string, unknown> = {
    title: r.plan.title,
    answer: r.answer,
    rttMs: rttOf(shown),
    offered: shown[0]?.result.offered ?? 0,
    rounds: r.rounds.length,
    chartedRound: r.shownRound + 1,
  };
  for (const run of shown) out[run.variant] = variantFigures(run);
  for (const [key, stat] of Object.entries(r.figures)) out[key] = stat.median;
  out.roundStats = r.figures;
  out.unstable = r.unstable;
  return out;
}

/** summary.json: per scenario its figures (medians over the rounds), or null when it could not run; every run's own figures. */
function buildSummary(results: readonly ScenarioResult[], machine: MachineDescription, setup: SetupFacts, createdAt: string, command: string) {
  const figures: Record<string, Record<string, unknown> | null> = {};
  const notAvailable: Record<string, string> = {};
  for (const r of results) {
    if (r.kind === 'ran') {
      figures[r.plan.name] = scenarioFigures(r);
    } else {
      figures[r.name] = null;
      notAvailable[r.name] = r.kind === 'failed' ? `failed: ${r.error}` : r.needs;
    }
  }
  const runs = results.flatMap((r) => (r.kind === 'ran' ? r.rounds.flat() : [])).map((run) => ({
    scenario: run.scenario,
    variant: run.variant,
    round: run.round,
    csv: csvName(run),
    figures: variantFigures(run),
    failures: run.result.failures,
    errors: run.result.errors,
    info: run.result.info,
    path: run.path,
  }));
  return { createdAt, command, machine, setup, figures, notAvailable, runs };
}

export async function writeReport(o: {
  readonly results: readonly ScenarioResult[];
  readonly machine: MachineDescription;
  readonly setup: SetupFacts;
  readonly command: string;
  /** Default bench-results/<timestamp> under the current directory. */
  readonly dir?: string;
  readonly png: boolean;
}) {
  const now = new Date();
  const dir = resolve(o.dir ?? join('bench-results', now.toISOString().replace(/[:.]/g, '-')));
  await mkdir(dir, { recursive: true });
  const summary = buildSummary(o.results, o.machine, o.setup, now.toISOString(), o.command);
  const csvFiles: string[] = [];
  for (const run of o.results.flatMap((r) => (r.kind === 'ran' ? r.rounds.flat() : []))) {
    const file = join(dir, csvName(run));
    await writeFile(file, toCsv(run.rows));
    csvFiles.push(file);
  }
  const summaryFile = join(dir, 'summary.json');
  await writeFile(summaryFile, `${JSON.stringify(summary, null, 2)}\n`);
  const data: ReportData = { createdAt: summary.createdAt, command: o.command, machine: o.machine, setup: o.setup, results: o.results };
  const htmlFile = join(dir, 'report.html');
  await writeFile(htmlFile, renderReport(data));
  /** report.png and each scenario's PNG, or why there are none. */
  let png: { readonly files: readonly string[] } | { readonly skipped: string } = { skipped: 'not requested' };
  if (o.png) {
    // report.png is the headline alone (question, answers, six panels); each scenario its section.
    const shots = [
      { selector: 'header.headline', file: join(dir, 'report.png') },
      ...inReadingOrder(o.results).map((r) => {
        const name = r.kind === 'ran' ? r.plan.name : r.name;
        return { selector: `section[data-scenario="${name}"]`, file: join(dir, `${name}.png`) };
      }),
    ];
    const outcome = await captureElements(htmlFile, WIDTH, shots);
    png = outcome.ok ? { files: outcome.files } : { skipped: outcome.reason };
  }
  return { dir, csvFiles, summaryFile, htmlFile, png, summary };
}
