// `direct`: node-postgres straight to Postgres at a small ramp, one round trip per query and the
// original client's two (prepare + execute). A sanity check of the whole harness that needs
// neither the pooler nor the WAN emulator, and the smallest end-to-end test of the report.
import { pgPoolVariant } from '../load/pg-pool-variant.js';
import { defineLoadScenario } from './load-scenario.js';
import type { ScenarioContext, VariantPlan } from './types.js';

const SESSIONS = 10;

/** A node-postgres variant straight to the context's Postgres (no pooler, no WAN). */
export function directPgPlan(name: string, sessions: number, prepare: boolean): VariantPlan {
  return {
    name,
    prepare: async (ctx: ScenarioContext) => ({
      variant: pgPoolVariant({ name, sessions, connectionConfig: ctx.pg, prepare }),
      poolerPid: null,
      rttMs: null,
      dispose: async () => undefined,
    }),
  };
}

const sessionsOf = (ctx: ScenarioContext): number => ctx.overrides?.sessions ?? SESSIONS;

export const directScenario = defineLoadScenario({
  name: 'direct',
  title: 'Direct to Postgres (sanity)',
  description: (ctx) =>
    `node-postgres direct to Postgres on loopback, ${sessionsOf(ctx)} sessions: simple query (1 round trip) vs prepare+execute (2 round trips, as the original client).`,
  variants: (ctx) => [directPgPlan('pg', sessionsOf(ctx), false), directPgPlan('pg-prepare', sessionsOf(ctx), true)],
  ramp: { startRate: 100, endRate: 2_000, durationMs: 15_000 },
  quickRamp: { startRate: 50, endRate: 500, durationMs: 3_000 },
  tickMs: 10,
  timeoutMs: 5_000,
});
