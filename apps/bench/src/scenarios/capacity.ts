// `capacity`: the highest rate this machine sustains for the workload query direct to Postgres, with
// no WAN delay, so every other result can be read as a fraction of what the hardware can do. A
// closed loop (each session issues its next query when the previous returns) at a few session
// counts; the best step wins. Load generator, node-postgres and Postgres share the same cores, as
// in every other scenario, so this is the capacity of the whole set-up, not of Postgres alone.
import { pgPoolVariant } from '../load/pg-pool-variant.js';
import { runClosedLoopVariant } from './run-variant.js';
import type { Scenario, ScenarioContext, ScenarioResult, VariantRun } from './types.js';

const WARMUP_MS = 500;

async function step(ctx: ScenarioContext, sessions: number, durationMs: number): Promise<{ run: VariantRun; qps: number }> {
  const name = `closed-${sessions}`;
  const variant = pgPoolVariant({ name, sessions, connectionConfig: ctx.pg });
  try {
    const { run, completed } = await runClosedLoopVariant(ctx, { scenario: 'capacity', name, variant, workers: sessions, durationMs, warmupMs: WARMUP_MS });
    return { qps: run.durationMs > 0 ? (completed * 1000) / run.durationMs : 0, run };
  } finally {
    await variant.close();
  }
}

export const capacityScenario: Scenario = {
  name: 'capacity',
  title: 'Capacity (closed loop, no WAN delay)',
  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    const counts = ctx.overrides?.capacitySessions ?? (ctx.quick ? [8, 32] : [4, 8, 16, 32, 64]);
    const stepMs = ctx.overrides?.capacityStepMs ?? (ctx.quick ? 2_000 : 4_000);
    const steps: Array<{ sessions: number; qps: number; failed: number }> = [];
    const runs: VariantRun[] = [];
    for (const sessions of counts) {
      ctx.log(`capacity: closed loop, ${sessions} sessions, ${stepMs / 1000} s`);
      const { run, qps } = await step(ctx, sessions, stepMs);
      steps.push({ sessions, qps: Math.round(qps), failed: run.failed });
      runs.push(run);
    }
    const best = steps.reduce((a, b) => (b.qps > a.qps ? b : a), steps[0] ?? { sessions: 0, qps: 0, failed: 0 });
    return {
      kind: 'capacity',
      name: 'capacity',
      title: this.title,
      description: `Closed loop direct to Postgres on loopback at ${counts.join(', ')} sessions, ${stepMs / 1000} s each after ${WARMUP_MS} ms warm-up; the best step is the capacity.`,
      qps: best.qps,
      bestSessions: best.sessions,
      steps,
      runs,
    };
  },
};
