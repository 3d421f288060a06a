// Scenario-specific figures computed from the finished runs: the processed rate over the ramp's
// last seconds, the Little's-law bound sessions / RTT, and the ratios each scenario's target names.
import { variantFigures } from '../report/figures.js';
import type { VariantRun } from './types.js';

const round = (v: number, digits = 2): number => Number(v.toFixed(digits));

/** Mean processed per second over the last `seconds` rows of the ramp (fewer if the ramp is shorter). */
export function lastSecondsRate(run: VariantRun, seconds: number): number {
  const rows = run.rows.slice(Math.max(0, run.rampRows - seconds), run.rampRows);
  if (rows.length === 0) return 0;
  return round(rows.reduce((s, r) => s + (r.number_of_queries_processed ?? 0), 0) / rows.length, 1);
}

/** Little's law: at most `sessions` queries in flight, each taking at least one RTT. */
export function littleBound(sessions: number, rttMs: number | null, roundTripsPerQuery = 1): number | null {
  if (rttMs === null || rttMs <= 0) return null;
  return round((sessions * 1000) / (rttMs * roundTripsPerQuery), 0);
}

export const ratio = (a: number | null, b: number | null): number | null => (a === null || b === null || b === 0 ? null : round(a / b, 3));

export function byName(runs: readonly VariantRun[], name: string): VariantRun | undefined {
  return runs.find((r) => r.variant === name);
}

export function figuresOf(run: VariantRun | undefined): ReturnType<typeof variantFigures> | null {
  return run === undefined ? null : variantFigures(run);
}

export const fmt = (v: number | null, digits = 1): string => (v === null ? 'n/a' : v.toFixed(digits));
