// Writes a run to bench-results/<timestamp>/: a CSV per variant and round, summary.json (the figures the --json line
// prints), report.html, and with Chromium report.png (the headline) and a <scenario>.png per scenario.
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { ScenarioResult, VariantRun } from '../scenarios/types.js';
import { toCsv } from '../telemetry/csv.js';
import { captureElements } from './chromium.js';
import { rttOf, variantFigures } from './figures.js';
import type { ReportData } from './html.js';
import { WIDTH, inReadingOrder, renderReport } from './html.js';

const csvName = (run: VariantRun): string => `${run.scenario}-${run.variant}-round${run.round}.csv`;

/** A scenario's JSON: its medians by name next to one entry per variant (the charted round's). */
function scenarioFigures(r: Extract<ScenarioResult, { kind: 'ran' }>): Record<string, unknown> {
  const shown = r.rounds[r.shownRound] ?? [];
  return {
    title: r.plan.title,
    answer: r.answer,
    rttMs: rttOf(shown),
    offered: shown[0]?.result.offered ?? 0,
    rounds: r.rounds.length,
    chartedRound: r.shownRound + 1,
    ...Object.fromEntries(shown.map((run) => [run.variant, variantFigures(run)])),
    ...Object.fromEntries(Object.entries(r.figures).map(([key, stat]) => [key, stat.median])),
    roundStats: r.figures,
    unstable: r.unstable,
  };
}

/** summary.json: per scenario its figures (medians over the rounds), or null when it could not run; every run's own figures. */
function buildSummary({ results, machine, setup, createdAt, command }: ReportData, ran: readonly VariantRun[]) {
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
  const runs = ran.map((run) => {
    const { failures, errors, info } = run.result;
    const { scenario, variant, round, path } = run;
    return { scenario, variant, round, csv: csvName(run), figures: variantFigures(run), failures, errors, info, path };
  });
  return { createdAt, command, machine, setup, figures, notAvailable, runs };
}

/** `dir`: default bench-results/<timestamp> under the current directory. */
export async function writeReport(o: Omit<ReportData, 'createdAt'> & { readonly dir?: string; readonly png: boolean }) {
  const now = new Date();
  const dir = resolve(o.dir ?? join('bench-results', now.toISOString().replace(/[:.]/g, '-')));
  await mkdir(dir, { recursive: true });
  const data: ReportData = { ...o, createdAt: now.toISOString() };
  const ran = o.results.flatMap((r) => (r.kind === 'ran' ? r.rounds.flat() : []));
  const summary = buildSummary(data, ran);
  const csvFiles: string[] = [];
  for (const run of ran) {
    const file = join(dir, csvName(run));
    await writeFile(file, toCsv(run.rows));
    csvFiles.push(file);
  }
  const summaryFile = join(dir, 'summary.json');
  await writeFile(summaryFile, `${JSON.stringify(summary, null, 2)}\n`);
  const htmlFile = join(dir, 'report.html');
  await writeFile(htmlFile, renderReport(data));
  /** report.png and each scenario's PNG, or why there are none. */
  let png: { readonly files: readonly string[] } | { readonly skipped: string } = { skipped: 'not requested' };
  if (o.png) {
    const names = inReadingOrder(o.results).map((r) => (r.kind === 'ran' ? r.plan.name : r.name));
    const sections = names.map((name) => ({ selector: `section[data-scenario="${name}"]`, file: join(dir, `${name}.png`) }));
    const outcome = await captureElements(htmlFile, WIDTH, [{ selector: 'header.headline', file: join(dir, 'report.png') }, ...sections]);
    png = outcome.ok ? { files: outcome.files } : { skipped: outcome.reason };
  }
  return { dir, csvFiles, summaryFile, htmlFile, png, summary };
}
