// The child side of runVariantInChild: rebuild the variant plan from the registry, run it, send
// the rows and the result to the parent, exit. Imported only by the bench program's entry.
import { findLoadSpec } from '../load-scenario.js';
import '../registry.js';
import { runLoadVariant } from '../run-variant.js';
import type { ScenarioContext } from '../types.js';
import type { VariantMessage, VariantWorkerConfig } from './variant-process.js';

const send = (message: VariantMessage): Promise<void> =>
  new Promise((resolve) => {
    if (process.send === undefined) resolve();
    else process.send(message, undefined, undefined, () => resolve());
  });

export async function runVariantWorker(config: VariantWorkerConfig): Promise<void> {
  // Ctrl-C, a kill, or the bench going away (stdin ends): exit through process.exit so the 'exit'
  // hooks run (they delete a network namespace this run made); the pooler and WAN processes
  // follow when their stdin (held by this process) ends.
  process.once('SIGINT', () => process.exit(130));
  process.once('SIGTERM', () => process.exit(143));
  process.stdin.on('end', () => process.exit(1)).resume();
  try {
    const ctx: ScenarioContext = {
      pg: config.ctx.pg,
      quick: config.ctx.quick,
      originalExact: config.ctx.originalExact,
      script: config.ctx.script,
      ...(config.ctx.overrides === null ? {} : { overrides: config.ctx.overrides }),
      onProgress: (event) => void send({ type: 'progress', event }),
      log: (line) => void send({ type: 'log', line }),
    };
    const spec = findLoadSpec(config.scenario);
    const plan = spec?.variants(ctx).find((p) => p.name === config.variant);
    if (plan === undefined) throw new Error(`no variant ${config.scenario}/${config.variant}`);
    const run = await runLoadVariant(ctx, { scenario: config.scenario, plan, ramp: config.ramp, tickMs: config.tickMs, timeoutMs: config.timeoutMs });
    await send({ type: 'result', run });
  } catch (error) {
    await send({ type: 'error', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  }
  process.disconnect?.();
  process.exit(0);
}
