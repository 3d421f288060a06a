// The client process of one variant run (the load generator and the client library, nothing else,
// so its CPU and RSS columns are the client's): opens every session, runs the load and reports on
// stdout, one JSON object a line: {"ready":...} once the sessions are open, {"row":...} every
// second, {"result":...} at the end. The bench's parent process reads them and adds the other
// processes' CPU to each row. On the packet path it runs inside the client's network namespace.
import { performance } from 'node:perf_hooks';
import { runClosedLoop } from '../load/closed-loop.js';
import { runOpenLoop } from '../load/open-loop.js';
import { offeredTotal } from '../load/schedule.js';
import type { Histogram } from '../telemetry/histogram.js';
import { countProcFds } from '../telemetry/proc.js';
import { LoadRecorder, TelemetrySampler } from '../telemetry/recorder.js';
import type { BuiltClient, ClientTarget } from './clients.js';
import { buildClient } from './clients.js';
import type { ClientResult, ClientSpec, LatencySummary, LoadSpec, PhasedRow } from './types.js';

export interface ChildConfig {
  readonly variant: string;
  readonly client: ClientSpec;
  readonly load: LoadSpec;
  readonly target: ClientTarget;
}

export type ChildMessage = { readonly ready: { readonly openMs: number } } | { readonly row: PhasedRow } | { readonly result: ClientResult };

const say = (message: ChildMessage): void => void process.stdout.write(`${JSON.stringify(message)}\n`);

export function latencySummary(h: Histogram): LatencySummary {
  return { meanUs: Math.round(h.mean), p50Us: h.percentile(50), p90Us: h.percentile(90), p99Us: h.percentile(99), p999Us: h.percentile(99.9), maxUs: h.max };
}

/** Rows of one phase, sent as they are sampled. */
function sampler(recorder: LoadRecorder, phaseOf: (index: number) => PhasedRow['phase'], step: number): TelemetrySampler {
  const s = new TelemetrySampler({ recorder, onRow: (row, index) => say({ row: { phase: phaseOf(index), step, row } }) });
  s.start();
  return s;
}

async function runLoad(client: BuiltClient, load: LoadSpec): Promise<{ recorder: LoadRecorder; offered: number }> {
  switch (load.kind) {
    case 'open': {
      if (load.probe !== null) {
        const probe = new LoadRecorder();
        const ramp = { startRate: load.probe.rate, endRate: load.probe.rate, durationMs: load.probe.seconds * 1000 };
        const s = sampler(probe, () => 'probe', 0);
        await runOpenLoop({ variant: client, recorder: probe, ramp, tickMs: load.tickMs, timeoutMs: load.timeoutMs });
        // Whole seconds only: the probe's rows are per-second CPU, a partial last one would skew them.
        s.stop();
      }
      const recorder = new LoadRecorder();
      const loadRows = Math.ceil(load.ramp.durationMs / 1000);
      const s = sampler(recorder, (i) => (i < loadRows ? 'load' : 'drain'), 0);
      await runOpenLoop({ variant: client, recorder, ramp: load.ramp, tickMs: load.tickMs, timeoutMs: load.timeoutMs });
      s.stop();
      s.sample(); // the rest of the drain, so the rows add up to the totals
      return { recorder, offered: offeredTotal(load.ramp) };
    }
    case 'closed': {
      const most = Math.max(1, ...load.steps.map((s) => s.workers));
      // JIT, Postgres plan cache, every backend's first queries: run first, not recorded.
      await runClosedLoop({ variant: client, recorder: new LoadRecorder(), workers: most, durationMs: load.warmupSeconds * 1000, timeoutMs: load.timeoutMs });
      const recorder = new LoadRecorder();
      for (const [index, step] of load.steps.entries()) {
        const s = sampler(recorder, () => 'load', index);
        await runClosedLoop({ variant: client, recorder, workers: step.workers, durationMs: step.seconds * 1000, timeoutMs: load.timeoutMs });
        s.stop();
        s.sample(); // the last partial second, so the rows add up to the totals
      }
      return { recorder, offered: recorder.totals().issued };
    }
    default: {
      const never: never = load;
      throw new Error(`unknown load ${JSON.stringify(never)}`);
    }
  }
}

export async function runVariantChild(config: ChildConfig): Promise<void> {
  // The parent holds our stdin: when it goes away, so do we (no orphaned load generator).
  process.stdin.on('end', () => process.exit(1)).resume();
  process.once('SIGTERM', () => process.exit(143));
  const client = buildClient(config.variant, config.client, config.target);
  try {
    const t0 = performance.now();
    await client.open();
    const openMs = performance.now() - t0;
    const fds = countProcFds('self');
    say({ ready: { openMs } });
    const { recorder, offered } = await runLoad(client, config.load);
    const totals = recorder.totals();
    say({
      result: {
        sessions: client.sessions,
        openMs,
        fds,
        offered,
        issued: totals.issued,
        processed: totals.processed,
        failed: totals.failed,
        failures: { ...recorder.failures },
        latency: latencySummary(recorder.total),
        errors: [...recorder.errorSamples],
        info: client.info(),
      },
    });
  } finally {
    await client.close();
  }
}
