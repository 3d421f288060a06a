// The figures of a steady run (`--steady RATE`: the same offered rate from the first second of
// the load to the last), per variant, medians over the rounds: the pooler's CPU per query over the
// whole load (its CPU summed over the load's seconds, divided by the queries answered in them),
// and the mean latency of the load's first second against that of the seconds after it (the cold
// start: server connections opened, code warming up).
import { median } from './median.js';
import { round1, round2 } from './round.js';
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

const orNull = (round: (x: number) => number, value: number | null): number | null => (value === null ? null : round(value));

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
    poolerUs[name] = orNull(round1, median(mine.map(poolerUsPerQuery)));
    const first = mine.map((r) => meanMs(r.rows.slice(0, Math.min(1, r.loadRows))));
    const later = mine.map((r) => meanMs(r.rows.slice(1, r.loadRows)));
    const ratios = mine.map((_, i) => {
      const f = first[i] ?? null;
      const l = later[i] ?? null;
      return f === null || l === null || l === 0 ? null : f / l;
    });
    firstSecond[name] = { firstMs: orNull(round1, median(first)), laterMs: orNull(round1, median(later)), ratio: orNull(round2, median(ratios)) };
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

/** The steady figures of each scenario that ran. */
export function steadyByScenario(results: readonly ScenarioResult[]): Map<string, SteadyFigures> {
  const out = new Map<string, SteadyFigures>();
  for (const r of results) if (r.kind === 'ran') out.set(r.plan.name, steadyFigures(r));
  return out;
}

/** The --json fields of a steady run: steadyPoolerUsPerQuery {tcp, quic, pgbouncer ...} and steadyFirstSecond. */
export function steadyJson(by: Map<string, SteadyFigures>): { steadyPoolerUsPerQuery: Record<string, number | null>; steadyFirstSecond: Record<string, SteadyFirstSecond> } {
  const us: Record<string, number | null> = {};
  const first: Record<string, SteadyFirstSecond> = {};
  for (const [scenario, f] of by) {
    const key = (variant: string): string => (by.size === 1 ? variant : `${scenario}/${variant}`);
    for (const [variant, v] of Object.entries(f.poolerUsPerQuery)) us[key(variant)] = v;
    for (const [variant, v] of Object.entries(f.firstSecond)) first[key(variant)] = v;
  }
  return { steadyPoolerUsPerQuery: us, steadyFirstSecond: first };
}
