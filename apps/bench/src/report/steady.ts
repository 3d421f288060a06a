// The figures of a steady run (`--steady RATE`, docs/benchmark.md), per variant, medians over the rounds: the pooler's
// CPU per query over the whole load, and the first second's mean latency against the later seconds' (the cold start).
import { meanLatencyMs } from './figures.js';
import { median } from './median.js';
import { round1, round2 } from './round.js';
import type { ScenarioResult, VariantRun } from '../scenarios/types.js';

/** The first second's mean latency against the later seconds', and firstMs / laterMs. */
type FirstSecond = { readonly firstMs: number | null; readonly laterMs: number | null; readonly ratio: number | null };
type SteadyFigures = ReturnType<typeof steadyFigures>;

const orNull = (round: (x: number) => number, value: number | null): number | null => (value === null ? null : round(value));

function poolerUsPerQuery(run: VariantRun): number | null {
  const load = run.rows.slice(0, run.loadRows);
  if (load.some((r) => r.pooler_cpu_milliseconds === null)) return null;
  const ms = load.reduce((s, r) => s + (r.pooler_cpu_milliseconds ?? 0), 0);
  const answered = load.reduce((s, r) => s + (r.number_of_queries_processed ?? 0), 0);
  return answered === 0 ? null : (ms * 1000) / answered;
}

/** The steady figures of one scenario's rounds, per variant (tcp, quic, pgbouncer ...). */
export function steadyFigures(result: Extract<ScenarioResult, { kind: 'ran' }>) {
  const runs = result.rounds.flat();
  const poolerUs: Record<string, number | null> = {};
  const firstSecond: Record<string, FirstSecond> = {};
  for (const name of new Set(runs.map((r) => r.variant))) {
    const mine = runs.filter((r) => r.variant === name);
    poolerUs[name] = orNull(round1, median(mine.map(poolerUsPerQuery)));
    const first = mine.map((r) => meanLatencyMs(r.rows.slice(0, Math.min(1, r.loadRows))));
    const later = mine.map((r) => meanLatencyMs(r.rows.slice(1, r.loadRows)));
    const ratios = first.map((f, i) => {
      const l = later[i] ?? null;
      return f === null || l === null || l === 0 ? null : f / l;
    });
    firstSecond[name] = { firstMs: orNull(round1, median(first)), laterMs: orNull(round1, median(later)), ratio: orNull(round2, median(ratios)) };
  }
  return { poolerUsPerQuery: poolerUs, firstSecond };
}

export function steadyLines(scenario: string, f: SteadyFigures): string[] {
  const out = [`${scenario}, steady load (medians of rounds):`];
  for (const [variant, us] of Object.entries(f.poolerUsPerQuery)) {
    const s = f.firstSecond[variant];
    out.push(`  ${variant}: pooler CPU ${us ?? '-'} µs per query over the load; first second's mean latency ${s?.firstMs ?? '-'} ms against ${s?.laterMs ?? '-'} ms after it (${s?.ratio ?? '-'}x)`);
  }
  return out;
}

export function steadyByScenario(results: readonly ScenarioResult[]): Map<string, SteadyFigures> {
  return new Map(results.flatMap((r) => (r.kind === 'ran' ? [[r.plan.name, steadyFigures(r)] as const] : [])));
}

/** The --json fields of a steady run: steadyPoolerUsPerQuery {tcp, quic, pgbouncer ...} and steadyFirstSecond. */
export function steadyJson(by: Map<string, SteadyFigures>) {
  const us: Record<string, number | null> = {};
  const first: Record<string, FirstSecond> = {};
  for (const [scenario, f] of by) {
    const key = (variant: string): string => (by.size === 1 ? variant : `${scenario}/${variant}`);
    for (const [variant, v] of Object.entries(f.poolerUsPerQuery)) us[key(variant)] = v;
    for (const [variant, v] of Object.entries(f.firstSecond)) first[key(variant)] = v;
  }
  return { steadyPoolerUsPerQuery: us, steadyFirstSecond: first };
}
