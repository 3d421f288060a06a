// Writes one benchmark run to bench-results/<timestamp>/: a CSV per variant and round, summary.json
// (the same figures the --json line prints), report.html, and with Chromium report.png (the
// headline: question, answers, six panels) and one <scenario>.png per scenario.
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { ScenarioResult, VariantRun } from '../scenarios/types.js';
import { toCsv } from '../telemetry/csv.js';
import { captureElements } from './chromium.js';
import type { VariantFigures } from './figures.js';
import { variantFigures } from './figures.js';
import type { ReportData, SetupFacts } from './html.js';
import { inReadingOrder, renderReport } from './html.js';
import type { MachineDescription } from './machine.js';

export interface WrittenReport {
  readonly dir: string;
  readonly csvFiles: readonly string[];
  readonly summaryFile: string;
  readonly htmlFile: string;
  /** report.png and each scenario's PNG, or why there are none. */
  readonly png: { readonly files: readonly string[] } | { readonly skipped: string };
  readonly summary: Summary;
}

export interface Summary extends Omit<ReportData, 'results'> {
  /** Per scenario its figures (medians over the rounds), or null when it could not run. */
  readonly figures: Record<string, Record<string, unknown> | null>;
  readonly notAvailable: Record<string, string>;
  readonly runs: ReadonlyArray<{
    readonly scenario: string;
    readonly variant: string;
    readonly round: number;
    readonly csv: string;
    readonly figures: VariantFigures;
    readonly failures: Record<string, number>;
    readonly errors: readonly string[];
    readonly info: Readonly<Record<string, number | string | null>>;
    readonly path: VariantRun['path'];
  }>;
}

export const nameOf = (r: ScenarioResult): string => (r.kind === 'ran' ? r.plan.name : r.name);

export function timestampDirName(date: Date): string {
  return date.toISOString().replace(/[:.]/g, '-');
}

export const csvName = (run: VariantRun): string => `${run.scenario}-${run.variant}-round${run.round}.csv`;

/** A scenario's JSON: its medians by name next to one entry per variant (the charted round's). */
export function scenarioFigures(r: ScenarioResult): Record<string, unknown> | null {
  if (r.kind !== 'ran') return null;
  const shown = r.rounds[r.shownRound] ?? [];
  const out: Record<string, unknown> = {
    title: r.plan.title,
    answer: r.answer,
    rttMs: shown.find((x) => x.path.rttMs !== null)?.path.rttMs ?? null,
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

export function buildSummary(results: readonly ScenarioResult[], machine: MachineDescription, setup: SetupFacts, createdAt: string, command: string): Summary {
  const figures: Summary['figures'] = {};
  const notAvailable: Summary['notAvailable'] = {};
  const runs: Array<Summary['runs'][number]> = [];
  for (const r of results) {
    switch (r.kind) {
      case 'unavailable':
        figures[r.name] = null;
        notAvailable[r.name] = r.needs;
        break;
      case 'failed':
        figures[r.name] = null;
        notAvailable[r.name] = `failed: ${r.error}`;
        break;
      case 'ran':
        figures[r.plan.name] = scenarioFigures(r);
        for (const run of r.rounds.flat()) {
          runs.push({ scenario: run.scenario, variant: run.variant, round: run.round, csv: csvName(run), figures: variantFigures(run), failures: run.result.failures, errors: run.result.errors, info: run.result.info, path: run.path });
        }
        break;
      default: {
        const never: never = r;
        throw new Error(`unknown result ${String(never)}`);
      }
    }
  }
  return { createdAt, command, machine, setup, figures, notAvailable, runs };
}

export async function writeReport(o: {
  readonly results: readonly ScenarioResult[];
  readonly machine: MachineDescription;
  readonly setup: SetupFacts;
  readonly command: string;
  /** Default bench-results/<timestamp> under the current directory. */
  readonly dir?: string;
  /** Default true. */
  readonly png?: boolean;
  readonly now?: Date;
}): Promise<WrittenReport> {
  const now = o.now ?? new Date();
  const dir = resolve(o.dir ?? join('bench-results', timestampDirName(now)));
  await mkdir(dir, { recursive: true });
  const summary = buildSummary(o.results, o.machine, o.setup, now.toISOString(), o.command);
  const csvFiles: string[] = [];
  for (const r of o.results) {
    if (r.kind !== 'ran') continue;
    for (const run of r.rounds.flat()) {
      const file = join(dir, csvName(run));
      await writeFile(file, toCsv(run.rows));
      csvFiles.push(file);
    }
  }
  const summaryFile = join(dir, 'summary.json');
  await writeFile(summaryFile, `${JSON.stringify(summary, null, 2)}\n`);
  const data: ReportData = { createdAt: summary.createdAt, command: o.command, machine: o.machine, setup: o.setup, results: o.results };
  const htmlFile = join(dir, 'report.html');
  await writeFile(htmlFile, renderReport(data));
  let png: WrittenReport['png'] = { skipped: 'not requested' };
  if (o.png !== false) {
    // report.png is the headline alone (question, answers, six panels); each scenario its section.
    const shots = [
      { selector: 'header.headline', file: join(dir, 'report.png') },
      ...inReadingOrder(o.results).map((r) => {
        const name = nameOf(r);
        return { selector: `section[data-scenario="${name}"]`, file: join(dir, `${name}.png`) };
      }),
    ];
    const outcome = await captureElements(htmlFile, 1480, shots);
    png = outcome.ok ? { files: outcome.files } : { skipped: outcome.reason };
  }
  return { dir, csvFiles, summaryFile, htmlFile, png, summary };
}
