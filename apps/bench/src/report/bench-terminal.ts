// `quicpool-bench bench`'s summary: each scenario's table and notes, and (several --workers) the pooler's CPU per count.
import { cpus } from 'node:os';
import { busiestStep, variantFigures } from './figures.js';
import { median } from './median.js';
import type { ScenarioResult } from '../scenarios/types.js';

/** Per scenario and variant: the pooler's CPU per query at the busiest step (median over rounds), queries answered and failed. */
type WorkerFigures = Record<string, Record<string, { poolerUsPerQuery: number | null; processed: number; failed: number }>>;

export function workerFigures(results: readonly ScenarioResult[]): WorkerFigures {
  const out: WorkerFigures = {};
  for (const r of results) {
    if (r.kind !== 'ran') continue;
    const variants: WorkerFigures[string] = {};
    for (const name of new Set(r.rounds.flat().map((run) => run.variant))) {
      const runs = r.rounds.flat().filter((run) => run.variant === name).map(variantFigures);
      variants[name] = {
        poolerUsPerQuery: median(runs.map((f) => busiestStep(f)?.usPerQuery.pooler ?? null)),
        processed: runs.reduce((n, f) => n + f.processed, 0),
        failed: runs.reduce((n, f) => n + f.failed, 0),
      };
    }
    out[r.plan.name] = variants;
  }
  return out;
}

/** The worker counts side by side: pooler CPU per query of each against the first count's. */
export function workerLines(by: Readonly<Record<string, WorkerFigures>>, counts: readonly number[]): string[] {
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

export function summaryLines(results: readonly ScenarioResult[]): string[] {
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
