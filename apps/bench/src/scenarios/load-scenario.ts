// The generic open-loop scenario: a name, the client variants to compare, a ramp (full and quick),
// tick spacing and per-query timeout. `direct` is built with it now; `original`, `sockets`, `fair`,
// `loss` and `lan` will be too, once their variants (pooler over TCP, QUIC streams) exist.
import type { Ramp } from '../load/schedule.js';
import { runLoadVariant } from './run-variant.js';
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
  /** Default 10 ms. */
  tickMs?: number | ((ctx: ScenarioContext) => number);
  /** Default 10 000 ms. */
  timeoutMs?: number;
}

export function scenarioRamp(spec: LoadScenarioSpec, ctx: ScenarioContext): Ramp {
  return ctx.overrides?.ramp ?? (ctx.quick ? spec.quickRamp : spec.ramp);
}

export function defineLoadScenario(spec: LoadScenarioSpec): Scenario {
  return {
    name: spec.name,
    title: spec.title,
    async run(ctx: ScenarioContext): Promise<ScenarioResult> {
      const ramp = scenarioRamp(spec, ctx);
      const tickMs = typeof spec.tickMs === 'function' ? spec.tickMs(ctx) : (spec.tickMs ?? 10);
      const runs: VariantRun[] = [];
      for (const plan of spec.variants(ctx)) {
        ctx.log(`${spec.name}: ${plan.name}, ${ramp.startRate} -> ${ramp.endRate} q/s over ${ramp.durationMs / 1000} s (ticks ${tickMs} ms)`);
        runs.push(await runLoadVariant(ctx, { scenario: spec.name, plan, ramp, tickMs, timeoutMs: spec.timeoutMs ?? 10_000 }));
      }
      return { kind: 'load', name: spec.name, title: spec.title, description: spec.description(ctx), ramp, runs };
    },
  };
}
