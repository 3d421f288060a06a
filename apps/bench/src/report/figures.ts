// The headline figures of a run, computed once and shared by the terminal table, summary.json, the
// --json line and the HTML report, so they can never disagree.
import type { ScenarioResult, VariantRun } from '../scenarios/types.js';

export interface VariantFigures {
  sessions: number;
  offered: number;
  processed: number;
  failed: number;
  peakProcessedPerSec: number;
  /** Mean latency of the queries answered in the last 3 s of the ramp (the peak offered rate). */
  peakMeanLatencyMs: number | null;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  peakActive: number;
  peakRssMB: number;
  /** Mean client CPU over the run, ms per second (1000 = one core). */
  meanCpuMsPerSec: number;
  poolerPeakRssMB: number | null;
  openMs: number;
}

const round = (value: number, digits = 2): number => Number(value.toFixed(digits));

export function variantFigures(run: VariantRun): VariantFigures {
  const rows = run.rows;
  const peakWindow = rows.slice(Math.max(0, run.rampRows - 3), run.rampRows);
  let weighted = 0;
  let answered = 0;
  for (const row of peakWindow) {
    if (row.average_query_time_us === null) continue;
    weighted += row.average_query_time_us * (row.number_of_queries_processed ?? 0);
    answered += row.number_of_queries_processed ?? 0;
  }
  const pooler = rows.map((r) => r.pooler_rss_bytes).filter((v): v is number => v !== null);
  const cpu = rows.reduce((sum, r) => sum + (r.cpu_milliseconds ?? 0), 0);
  return {
    sessions: run.sessions,
    offered: run.offered,
    processed: run.processed,
    failed: run.failed,
    peakProcessedPerSec: Math.max(0, ...rows.map((r) => r.number_of_queries_processed ?? 0)),
    peakMeanLatencyMs: answered === 0 ? null : round(weighted / answered / 1000, 3),
    p50Ms: round(run.latency.p50Us / 1000, 3),
    p99Ms: round(run.latency.p99Us / 1000, 3),
    maxMs: round(run.latency.maxUs / 1000, 3),
    peakActive: Math.max(0, ...rows.map((r) => r.active_number_of_queries ?? 0)),
    peakRssMB: round(Math.max(0, ...rows.map((r) => r.memory_bytes ?? 0)) / 2 ** 20, 1),
    meanCpuMsPerSec: rows.length === 0 ? 0 : Math.round(cpu / rows.length),
    poolerPeakRssMB: pooler.length === 0 ? null : round(Math.max(...pooler) / 2 ** 20, 1),
    openMs: Math.round(run.openMs),
  };
}

/** The JSON figures of one scenario; null when it could not run (never invented numbers). */
export function scenarioFigures(result: ScenarioResult): Record<string, unknown> | null {
  switch (result.kind) {
    case 'load': {
      const out: Record<string, unknown> = {
        rttMs: result.runs.find((r) => r.rttMs !== null)?.rttMs ?? null,
        offered: result.runs[0]?.offered ?? 0,
      };
      // The shape: one key per variant next to rttMs/offered ({"tcp": {...}, "quic": {...}}).
      for (const run of result.runs) out[run.variant] = variantFigures(run);
      // Scenario-specific figures (last-5-s rates, Little's-law bound, fds, loss method...).
      for (const [key, value] of Object.entries(result.extra ?? {})) out[key] = value;
      return out;
    }
    case 'lan': {
      const out: Record<string, unknown> = { tps: result.tps, pgbench: result.pgbench };
      for (const run of result.runs) out[run.variant] = variantFigures(run);
      return out;
    }
    case 'capacity':
      return { qps: result.qps, sessions: result.bestSessions, steps: result.steps };
    case 'unavailable':
      return null;
    default: {
      const never: never = result;
      return never;
    }
  }
}

export interface RatioRow {
  metric: string;
  baseline: string;
  other: string;
  baselineValue: number | null;
  otherValue: number | null;
  /** other / baseline; null when either side is missing or the baseline is zero. */
  ratio: number | null;
}

const RATIO_METRICS: ReadonlyArray<[string, (f: VariantFigures) => number | null]> = [
  ['processed', (f) => f.processed],
  ['failed', (f) => f.failed],
  ['peak processed/s', (f) => f.peakProcessedPerSec],
  ['mean latency at peak (ms)', (f) => f.peakMeanLatencyMs],
  ['p99 latency (ms)', (f) => f.p99Ms],
  ['peak client RSS (MB)', (f) => f.peakRssMB],
  ['mean client CPU (ms/s)', (f) => f.meanCpuMsPerSec],
];

/** Every other variant against the first one (the baseline, e.g. TCP), metric by metric. */
export function headlineRatios(runs: readonly VariantRun[]): RatioRow[] {
  const [first, ...rest] = runs;
  if (first === undefined) return [];
  const base = variantFigures(first);
  const rows: RatioRow[] = [];
  for (const run of rest) {
    const other = variantFigures(run);
    for (const [metric, pick] of RATIO_METRICS) {
      const a = pick(base);
      const b = pick(other);
      rows.push({
        metric,
        baseline: first.variant,
        other: run.variant,
        baselineValue: a,
        otherValue: b,
        ratio: a === null || b === null || a === 0 ? null : round(b / a, 3),
      });
    }
  }
  return rows;
}
