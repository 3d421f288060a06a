// Runs one variant under an open-loop ramp with 1 s telemetry, always closing what it opened.
import { readdirSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { runClosedLoop } from '../load/closed-loop.js';
import { runOpenLoop } from '../load/open-loop.js';
import type { ClientVariant } from '../load/variant.js';
import type { Ramp } from '../load/schedule.js';
import { offeredTotal } from '../load/schedule.js';
import type { Histogram } from '../telemetry/histogram.js';
import { LoadRecorder, TelemetrySampler } from '../telemetry/recorder.js';
import type { LatencySummary, ScenarioContext, VariantPlan, VariantRun } from './types.js';

export function latencySummary(h: Histogram): LatencySummary {
  return {
    meanUs: Math.round(h.mean),
    p50Us: h.percentile(50),
    p90Us: h.percentile(90),
    p99Us: h.percentile(99),
    p999Us: h.percentile(99.9),
    maxUs: h.max,
  };
}

export interface LoadRunOptions {
  scenario: string;
  plan: VariantPlan;
  ramp: Ramp;
  tickMs: number;
  timeoutMs: number;
}

export async function runLoadVariant(ctx: ScenarioContext, options: LoadRunOptions): Promise<VariantRun> {
  const debug = process.env.QPB_DEBUG === '1' ? (what: string) => ctx.log(`${options.scenario}/${options.plan.name} ${what} at ${Math.round(performance.now())}`) : () => undefined;
  debug('prepare');
  const prepared = await options.plan.prepare(ctx);
  debug('prepared');
  const { variant } = prepared;
  try {
    const openStart = performance.now();
    await variant.open();
    const openMs = performance.now() - openStart;
    debug('opened');
    const fds = openFds();
    const recorder = new LoadRecorder();
    const expectedRows = Math.ceil(options.ramp.durationMs / 1000);
    const sampler = new TelemetrySampler({
      recorder,
      poolerPid: prepared.poolerPid,
      rttMs: () => prepared.rttMs,
      onRow: (row, index) => ctx.onProgress({ scenario: options.scenario, variant: variant.name, index, expectedRows, row }),
    });
    sampler.start();
    const result = await runOpenLoop({ variant, recorder, ramp: options.ramp, tickMs: options.tickMs, timeoutMs: options.timeoutMs });
    const rows = await sampler.stopAtNextSample();
    const totals = recorder.totals();
    return {
      scenario: options.scenario,
      variant: variant.name,
      sessions: variant.sessions,
      rows: [...rows],
      rampRows: Math.min(rows.length, Math.ceil(result.rampMs / 1000)),
      offered: offeredTotal(options.ramp),
      issued: totals.issued,
      processed: totals.processed,
      failed: totals.failed,
      failures: { ...recorder.failures },
      latency: latencySummary(recorder.total),
      rttMs: prepared.rttMs,
      openMs,
      durationMs: result.durationMs,
      fds,
      errors: [...recorder.errorSamples],
      ...(prepared.info === undefined ? {} : { info: prepared.info() }),
    };
  } finally {
    debug('ran');
    await variant.close();
    debug('closed');
    await prepared.dispose();
    debug('disposed');
  }
}

/** File descriptors this process holds now (Linux /proc), or null elsewhere. */
export function openFds(): number | null {
  try {
    return readdirSync('/proc/self/fd').length;
  } catch {
    return null;
  }
}

export interface ClosedLoopRunOptions {
  readonly scenario: string;
  readonly name: string;
  readonly variant: ClientVariant;
  /** Sessions issuing queries back to back. */
  readonly workers: number;
  readonly durationMs: number;
  /** Run first and not recorded (JIT, Postgres plan cache, backends' first queries). */
  readonly warmupMs: number;
  /** The pooler's process, sampled by the telemetry (null: none). */
  readonly poolerPid?: number | null;
  /** Count the client's open file descriptors once every session is open. */
  readonly countFds?: boolean;
}

/**
 * Opens the variant (timed), warms it up, then runs a closed loop of `workers` sessions for
 * `durationMs` with per-second telemetry. The caller closes the variant.
 */
export async function runClosedLoopVariant(ctx: ScenarioContext, o: ClosedLoopRunOptions): Promise<{ run: VariantRun; completed: number }> {
  const openStart = performance.now();
  await o.variant.open();
  const openMs = performance.now() - openStart;
  const fds = o.countFds === true ? openFds() : undefined;
  await runClosedLoop({ variant: o.variant, recorder: new LoadRecorder(), workers: o.workers, durationMs: o.warmupMs });
  const recorder = new LoadRecorder();
  const expectedRows = Math.ceil(o.durationMs / 1000);
  const sampler = new TelemetrySampler({
    recorder,
    poolerPid: o.poolerPid ?? null,
    onRow: (row, index) => ctx.onProgress({ scenario: o.scenario, variant: o.name, index, expectedRows, row }),
  });
  sampler.start();
  const result = await runClosedLoop({ variant: o.variant, recorder, workers: o.workers, durationMs: o.durationMs });
  sampler.stop();
  sampler.sample(); // the last partial second, so the rows add up to the totals
  const totals = recorder.totals();
  const run: VariantRun = {
    scenario: o.scenario,
    variant: o.name,
    sessions: o.workers,
    rows: [...sampler.rows],
    rampRows: sampler.rows.length,
    offered: totals.issued,
    issued: totals.issued,
    processed: totals.processed,
    failed: totals.failed,
    failures: { ...recorder.failures },
    latency: latencySummary(recorder.total),
    rttMs: null,
    openMs,
    durationMs: result.elapsedMs,
    ...(fds !== undefined ? { fds } : {}),
  };
  return { run, completed: result.completed };
}
