// The figures of a steady run (`--steady RATE`: the same offered rate from the first second of
// the load to the last), per variant, medians over the rounds: the pooler's CPU per query over the
// whole load (its CPU summed over the load's seconds, divided by the queries answered in them),
// and the mean latency of the load's first second against that of the seconds after it (the cold
// start: server connections opened, code warming up).
import { median } from './median.js';
import type { ScenarioResult, VariantRun } from '../scenarios/types.js';

export interface SteadyFirstSecond {
  readonly firstMs: number | null;
  readonly laterMs: number | null;
  /** firstMs / laterMs. */
  readonly ratio: number | null;
}

export interface SteadyFigures {
  /** Per variant (tcp, quic, pgbouncer ...). */
  readonly poolerUsPerQuery: Record<string, number | null>;
  readonly firstSecond: Record<string, SteadyFirstSecond>;
}

const round = (value: number | null, digits: number): number | null => (value === null ? null : Number(value.toFixed(digits)));

function poolerUsPerQuery(run: VariantRun): number | null {
  const load = run.rows.slice(0, run.loadRows);
  if (load.some((r) => r.pooler_cpu_milliseconds === null)) return null;
  const ms = load.reduce((s, r) => s + (r.pooler_cpu_milliseconds ?? 0), 0);
  const answered = load.reduce((s, r) => s + (r.number_of_queries_processed ?? 0), 0);
  return answered === 0 ? null : (ms * 1000) / answered;
}

/** Mean latency (ms) of the rows, weighted by the queries each answered. */
function meanMs(rows: VariantRun['rows']): number | null {
  let weighted = 0;
  let answered = 0;
  for (const r of rows) {
    if (r.average_query_time_us === null) continue;
    weighted += r.average_query_time_us * (r.number_of_queries_processed ?? 0);
    answered += r.number_of_queries_processed ?? 0;
  }
  return answered === 0 ? null : weighted / answered / 1000;
}

/** The steady figures of one scenario's rounds. */
export function steadyFigures(result: Extract<ScenarioResult, { kind: 'ran' }>): SteadyFigures {
  const runs = result.rounds.flat();
  const poolerUs: Record<string, number | null> = {};
  const firstSecond: Record<string, SteadyFirstSecond> = {};
  for (const name of new Set(runs.map((r) => r.variant))) {
    const mine = runs.filter((r) => r.variant === name);
    poolerUs[name] = round(median(mine.map(poolerUsPerQuery)), 1);
    const first = mine.map((r) => meanMs(r.rows.slice(0, Math.min(1, r.loadRows))));
    const later = mine.map((r) => meanMs(r.rows.slice(1, r.loadRows)));
    const ratios = mine.map((_, i) => {
      const f = first[i] ?? null;
      const l = later[i] ?? null;
      return f === null || l === null || l === 0 ? null : f / l;
    });
    firstSecond[name] = { firstMs: round(median(first), 1), laterMs: round(median(later), 1), ratio: round(median(ratios), 2) };
  }
  return { poolerUsPerQuery: poolerUs, firstSecond };
}

/** Terminal lines of the steady figures. */
export function steadyLines(scenario: string, f: SteadyFigures): string[] {
  const out = [`${scenario}, steady load (medians of rounds):`];
  for (const [variant, us] of Object.entries(f.poolerUsPerQuery)) {
    const s = f.firstSecond[variant];
    out.push(`  ${variant}: pooler CPU ${us ?? '-'} µs per query over the load; first second's mean latency ${s?.firstMs ?? '-'} ms against ${s?.laterMs ?? '-'} ms after it (${s?.ratio ?? '-'}x)`);
  }
  return out;
}
