// The generic open-loop scenario: a name, the client variants to compare, a ramp (full and quick),
// tick spacing and per-query timeout, plus the scenario's own figures. `direct`, `original`,
// `sockets`, `fair` and `loss` are built with it (`lan` and `capacity` are closed loops). With the
// bench program at hand (ctx.script) each variant runs in a child process of its own.
import type { Ramp } from '../load/schedule.js';
import { runLoadVariant } from './run-variant.js';
import { runVariantInChild } from './stack/variant-process.js';
import type { Scenario, ScenarioContext, ScenarioResult, VariantPlan, VariantRun } from './types.js';

export interface LoadScenarioSpec {
  name: string;
  title: string;
  /** What is compared and why (shown in the report). */
  description: (ctx: ScenarioContext) => string;
  /** Run one after the other, in this order; the first is the baseline of the ratios. */
  variants: (ctx: ScenarioContext) => VariantPlan[];
  ramp: Ramp;
  quickRamp: Ramp;
  /** Overrides ramp/quickRamp from the context (e.g. --original-exact). */
  rampFor?: (ctx: ScenarioContext) => Ramp;
  /** Default 10 ms. */
  tickMs?: number | ((ctx: ScenarioContext) => number);
  /** Default 10 000 ms (5 000 ms in quick mode, so overloaded runs drain sooner). */
  timeoutMs?: number;
  /** Scenario-specific figures and findings from the finished runs. */
  summarize?: (runs: readonly VariantRun[], ctx: ScenarioContext, ramp: Ramp) => { extra: Record<string, number | string | boolean | null>; notes: string[] };
  /** Why the scenario cannot run here (e.g. no root for real loss), or null. */
  unavailable?: (ctx: ScenarioContext) => string | null;
}

const specs = new Map<string, LoadScenarioSpec>();

/** The spec a scenario was defined with (the variant worker rebuilds plans from it by name). */
export function findLoadSpec(name: string): LoadScenarioSpec | undefined {
  return specs.get(name);
}

export function scenarioRamp(spec: LoadScenarioSpec, ctx: ScenarioContext): Ramp {
  return ctx.overrides?.ramp ?? spec.rampFor?.(ctx) ?? (ctx.quick ? spec.quickRamp : spec.ramp);
}

export function defineLoadScenario(spec: LoadScenarioSpec): Scenario {
  specs.set(spec.name, spec);
  return {
    name: spec.name,
    title: spec.title,
    async run(ctx: ScenarioContext): Promise<ScenarioResult> {
      const why = spec.unavailable?.(ctx) ?? null;
      if (why !== null) return { kind: 'unavailable', name: spec.name, title: spec.title, needs: why };
      const ramp = scenarioRamp(spec, ctx);
      const tickMs = typeof spec.tickMs === 'function' ? spec.tickMs(ctx) : (spec.tickMs ?? 10);
      const runs: VariantRun[] = [];
      for (const plan of spec.variants(ctx)) {
        ctx.log(`${spec.name}: ${plan.name}, ${ramp.startRate} -> ${ramp.endRate} q/s over ${ramp.durationMs / 1000} s (ticks ${tickMs} ms)`);
        const options = { scenario: spec.name, ramp, tickMs, timeoutMs: spec.timeoutMs ?? (ctx.quick ? 5_000 : 10_000) };
        // With the bench program at hand, each variant runs in its own process (clean CPU/RSS).
        runs.push(ctx.script === null ? await runLoadVariant(ctx, { ...options, plan }) : await runVariantInChild(ctx, ctx.script, { ...options, variant: plan.name }));
      }
      const summary = spec.summarize?.(runs, ctx, ramp);
      return {
        kind: 'load',
        name: spec.name,
        title: spec.title,
        description: spec.description(ctx),
        ramp,
        runs,
        ...(summary === undefined ? {} : { extra: summary.extra, notes: summary.notes }),
      };
    },
  };
}
