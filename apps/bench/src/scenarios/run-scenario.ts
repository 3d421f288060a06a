// A scenario run R rounds, every variant once a round in alternating order (a slow drift of the machine hits all alike);
// every figure is then the median over the rounds with its min and max, a key figure flagged when they spread over 15%.
import { median } from '../report/median.js';
import type { BenchContext } from './run-variant.js';
import { runVariant } from './run-variant.js';
import type { Figures } from './summaries.js';
import { KEY_FIGURES, answerOf, cpuNotes, summarize } from './summaries.js';
import type { RoundStat, ScenarioPlan, ScenarioResult, VariantRun } from './types.js';

/** Rounds of a key figure may differ by this share of their median before the scenario is flagged. */
const UNSTABLE_SPREAD = 0.15;

export function roundStat(values: readonly (number | null)[]): RoundStat {
  const known = values.filter((v): v is number => v !== null && Number.isFinite(v));
  const m = median(known);
  return { median: m === null ? null : Number(m.toFixed(4)), min: known.length === 0 ? null : Math.min(...known), max: known.length === 0 ? null : Math.max(...known), values };
}

export function unstable(stat: RoundStat): boolean {
  if (stat.median === null || stat.min === null || stat.max === null || stat.median === 0) return false;
  return (stat.max - stat.min) / Math.abs(stat.median) > UNSTABLE_SPREAD;
}

/** The round whose `key` is closest to its median over the rounds (its rows are the ones drawn); the first on a tie. */
function medianRound(perRound: readonly Figures[], key: string | undefined, target: number | null): number {
  const gaps = perRound.map((f) => {
    const v = key === undefined ? null : (f[key] ?? null);
    return v === null || target === null || !Number.isFinite(v) ? Infinity : Math.abs(v - target);
  });
  return Math.max(0, gaps.indexOf(Math.min(...gaps)));
}

function pathNotes(runs: readonly VariantRun[]): string[] {
  return runs.flatMap((r) => {
    const p = r.path;
    if (p.mode === 'none') return [];
    const drops = p.randomDrops === null ? '' : `, random drops ${p.randomDrops[0]} up / ${p.randomDrops[1]} down, queue drops ${p.queueDrops ?? 0}`;
    const late = p.lateP99Us === null ? '' : `, forwarder release lateness p99 ${p.lateP99Us} µs (scheduling ${p.forwarderSched ?? '?'})`;
    return [`${r.variant} path: RTT ${p.rttMs?.toFixed(2) ?? 'n/a'} ms (p99 ${p.rttP99Ms?.toFixed(2) ?? 'n/a'})${drops}${late}.`];
  });
}

export async function runScenario(ctx: BenchContext, plan: ScenarioPlan, rounds: number): Promise<ScenarioResult> {
  const all: VariantRun[][] = [];
  for (let round = 1; round <= rounds; round++) {
    const order = round % 2 === 1 ? [...plan.variants] : [...plan.variants].reverse();
    const runs = new Map<string, VariantRun>();
    for (const variant of order) {
      ctx.log(`${plan.name} round ${round}/${rounds}: ${variant.name} (${variant.label})`);
      runs.set(variant.name, await runVariant(ctx, plan, variant, round));
    }
    // Stored in plan order, whatever order they ran in.
    all.push(plan.variants.map((v) => runs.get(v.name)).filter((r): r is VariantRun => r !== undefined));
  }
  const perRound = all.map((runs) => summarize(plan, runs));
  const keys = [...new Set(perRound.flatMap((f) => Object.keys(f)))];
  const figures: Record<string, RoundStat> = Object.fromEntries(keys.map((k) => [k, roundStat(perRound.map((f) => f[k] ?? null))]));
  const keyFigures = KEY_FIGURES[plan.name];
  const first = keyFigures[0];
  const shownRound = medianRound(perRound, first, first === undefined ? null : (figures[first]?.median ?? null));
  const flagged = keyFigures.filter((k) => figures[k] !== undefined && unstable(figures[k]));
  const shown = all[shownRound] ?? [];
  const notes = [
    ...(flagged.length > 0 ? [`Unstable: the rounds of ${flagged.join(', ')} differ by more than ${UNSTABLE_SPREAD * 100}% of their median (values per round in the table below).`] : []),
    ...cpuNotes(shown),
    ...pathNotes(shown),
  ];
  return { kind: 'ran', plan, rounds: all, figures, keyFigures, unstable: flagged, shownRound, answer: answerOf(plan, figures), notes };
}
