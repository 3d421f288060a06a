// Writes one benchmark run to bench-results/<timestamp>/: a CSV per variant run, summary.json (the
// same figures the --json line prints), report.html, and report.png when Chromium is installed.
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { ScenarioResult } from '../scenarios/types.js';
import { toCsv } from '../telemetry/csv.js';
import { scenarioFigures, variantFigures } from './figures.js';
import type { ChromiumOutcome } from './chromium.js';
import { screenshot } from './chromium.js';
import { renderReport } from './html.js';
import type { MachineDescription } from './machine.js';

export interface WrittenReport {
  dir: string;
  csvFiles: string[];
  summaryFile: string;
  htmlFile: string;
  /** The PNG path, or why there is none. */
  png: { file: string } | { skipped: string };
  summary: Summary;
}

export interface Summary {
  createdAt: string;
  command: string;
  machine: MachineDescription;
  /** Per scenario its figures, or null when it could not run. */
  figures: Record<string, Record<string, unknown> | null>;
  notAvailable: Record<string, string>;
  runs: Array<{
    scenario: string;
    variant: string;
    csv: string;
    figures: ReturnType<typeof variantFigures>;
    failures: Record<string, number>;
    /** First distinct error messages of failed queries. */
    errors: string[];
    /** Facts about the variant's path (transport, port, loss method, drops...). */
    info: Record<string, string | number | null>;
  }>;
}

export function timestampDirName(date: Date): string {
  return date.toISOString().replace(/[:.]/g, '-');
}

const safe = (name: string): string => name.replace(/[^A-Za-z0-9_.-]/g, '_');

export function buildSummary(results: readonly ScenarioResult[], machine: MachineDescription, createdAt: string, command: string): Summary {
  const figures: Summary['figures'] = {};
  const notAvailable: Summary['notAvailable'] = {};
  const runs: Summary['runs'] = [];
  for (const result of results) {
    figures[result.name] = scenarioFigures(result);
    switch (result.kind) {
      case 'unavailable':
        notAvailable[result.name] = result.needs;
        break;
      case 'load':
      case 'capacity':
      case 'lan':
        for (const run of result.runs) {
          runs.push({ scenario: run.scenario, variant: run.variant, csv: `${safe(run.scenario)}-${safe(run.variant)}.csv`, figures: variantFigures(run), failures: run.failures, errors: run.errors ?? [], info: run.info ?? {} });
        }
        break;
      default: {
        const never: never = result;
        throw new Error(`unknown result ${String(never)}`);
      }
    }
  }
  return { createdAt, command, machine, figures, notAvailable, runs };
}

/** Page height for the screenshot: title block plus, per scenario, its chart grid and tables. */
function pageHeight(results: readonly ScenarioResult[]): number {
  // Measured on rendered pages: ~1,300 px per scenario with charts, ~40 px per table row of its runs.
  let height = 200;
  for (const r of results) {
    if (r.kind === 'unavailable') height += 110;
    else if (r.kind === 'load') height += 1400 + 40 * r.runs.length + 30 * Object.keys(r.extra ?? {}).length + 60 * (r.notes?.length ?? 0);
    else if (r.kind === 'lan') height += 1700 + 40 * r.runs.length + 60 * r.notes.length;
    else height += 1400 + 40 * r.runs.length;
  }
  return Math.min(24_000, height);
}

export async function writeReport(options: {
  results: readonly ScenarioResult[];
  machine: MachineDescription;
  command: string;
  /** Default bench-results/<timestamp> under the current directory. */
  dir?: string;
  /** Default true. */
  png?: boolean;
  now?: Date;
}): Promise<WrittenReport> {
  const now = options.now ?? new Date();
  const dir = resolve(options.dir ?? join('bench-results', timestampDirName(now)));
  await mkdir(dir, { recursive: true });
  const summary = buildSummary(options.results, options.machine, now.toISOString(), options.command);
  const csvFiles: string[] = [];
  for (const result of options.results) {
    if (result.kind === 'unavailable') continue;
    for (const run of result.runs) {
      const file = join(dir, `${safe(run.scenario)}-${safe(run.variant)}.csv`);
      await writeFile(file, toCsv(run.rows));
      csvFiles.push(file);
    }
  }
  const summaryFile = join(dir, 'summary.json');
  await writeFile(summaryFile, `${JSON.stringify(summary, null, 2)}\n`);
  const htmlFile = join(dir, 'report.html');
  await writeFile(htmlFile, renderReport({ createdAt: summary.createdAt, machine: options.machine, results: options.results, command: options.command }));
  let png: WrittenReport['png'] = { skipped: 'not requested' };
  if (options.png !== false) {
    const file = join(dir, 'report.png');
    const outcome: ChromiumOutcome = await screenshot(htmlFile, file, 1480, pageHeight(options.results));
    png = outcome.ok ? { file } : { skipped: outcome.reason };
  }
  return { dir, csvFiles, summaryFile, htmlFile, png, summary };
}
