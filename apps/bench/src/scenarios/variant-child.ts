// The client process of one variant run (the load generator and the client library, nothing else, so its CPU and RSS
// columns are the client's): opens every session, runs the load and reports on stdout, one JSON object a line:
// {"ready":...} once the sessions are open, {"row":...} every second, {"result":...} at the end; the parent adds the
// other processes' CPU to each row. On the packet path it runs in the client's network namespace.
import { performance } from 'node:perf_hooks';
import { runClosedLoop, runOpenLoop } from '../load/generators.js';
import { offeredTotal } from '../load/schedule.js';
import { countProcFds } from '../telemetry/proc.js';
import { LoadRecorder, TelemetrySampler } from '../telemetry/recorder.js';
import type { BuiltClient, ClientTarget } from './clients.js';
import { buildClient } from './clients.js';
import type { ClientSpec, LoadSpec, PhasedRow } from './types.js';

export type ChildConfig = Readonly<{ variant: string; client: ClientSpec; load: LoadSpec; target: ClientTarget }>;

/** A line of the client process: one of these fields set. */
export type ChildMessage = Partial<{ readonly ready: { readonly openMs: number }; readonly row: PhasedRow; readonly result: ClientResult }>;

const say = (message: ChildMessage): void => void process.stdout.write(`${JSON.stringify(message)}\n`);

// Runs `load`, sending the recorder's rows as they are sampled, each of the phase `phaseOf` its index; with `rest`,
// one more row for the last partial second, so the rows add up to the totals.
async function sampled(recorder: LoadRecorder, phaseOf: (i: number) => PhasedRow['phase'], step: number, rest: boolean, load: () => Promise<unknown>): Promise<void> {
  const sampler = new TelemetrySampler({ recorder, onRow: (row, index) => say({ row: { phase: phaseOf(index), step, row } }) });
  sampler.start();
  await load();
  sampler.stop();
  if (rest) sampler.sample();
}

async function runLoad(variant: BuiltClient, load: LoadSpec): Promise<{ recorder: LoadRecorder; offered: number }> {
  const recorder = new LoadRecorder();
  const timeoutMs = load.timeoutMs;
  if (load.kind === 'open') {
    const { probe, tickMs, ramp } = load;
    if (probe !== null) {
      const probed = new LoadRecorder();
      const constant = { startRate: probe.rate, endRate: probe.rate, durationMs: probe.seconds * 1000 };
      // Whole seconds only: the probe's rows are per-second CPU, a partial last one would skew them.
      await sampled(probed, () => 'probe', 0, false, () => runOpenLoop({ variant, recorder: probed, ramp: constant, tickMs, timeoutMs }));
    }
    const loadRows = Math.ceil(ramp.durationMs / 1000);
    await sampled(recorder, (i) => (i < loadRows ? 'load' : 'drain'), 0, true, () => runOpenLoop({ variant, recorder, ramp, tickMs, timeoutMs }));
    return { recorder, offered: offeredTotal(ramp) };
  }
  const most = Math.max(1, ...load.steps.map((s) => s.workers));
  // JIT, Postgres plan cache, every backend's first queries: run first, not recorded.
  await runClosedLoop({ variant, recorder: new LoadRecorder(), workers: most, durationMs: load.warmupSeconds * 1000, timeoutMs });
  for (const [index, { workers, seconds }] of load.steps.entries()) {
    await sampled(recorder, () => 'load', index, true, () => runClosedLoop({ variant, recorder, workers, durationMs: seconds * 1000, timeoutMs }));
  }
  return { recorder, offered: recorder.totals().issued };
}

/** What the client process reports at the end of its load; `fds`: what it held with every session open. */
function resultOf(client: BuiltClient, o: { openMs: number; fds: number | null; offered: number }, recorder: LoadRecorder) {
  const { processed, failed } = recorder.totals();
  const h = recorder.total;
  const latency = { meanUs: Math.round(h.mean), p50Us: h.percentile(50), p99Us: h.percentile(99), maxUs: h.max };
  const { failures, errorSamples: errors } = recorder;
  // info: transport facts (QUIC connections, handshakes, resumptions ...).
  return { sessions: client.sessions, ...o, processed, failed, failures, latency, errors, info: client.info() };
}

export type ClientResult = ReturnType<typeof resultOf>;

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
    say({ result: resultOf(client, { openMs, fds, offered }, recorder) });
  } finally {
    await client.close();
  }
}
