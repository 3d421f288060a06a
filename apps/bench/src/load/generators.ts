// The load generators. The open loop issues queries on the ramp's schedule whether or not earlier ones have finished (a
// closed loop would slow down with the system under test and hide overload, the "coordinated omission" trap); every
// query either completes, fails, or is declared failed at its deadline, so the run always ends within ramp + timeout +
// drain, even against a hung variant. The closed loop only finds the machine's capacity.
import { performance } from 'node:perf_hooks';
import type { LoadRecorder } from '../telemetry/recorder.js';
import type { Ramp } from './schedule.js';
import { RampTicker } from './schedule.js';
import type { ClientVariant } from './variant.js';
import { Fifo, WORKLOAD_SQL, failureReasonOf } from './variant.js';

/** The generator's only access to time, so tests can drive it with a fake clock. `now`: monotonic ms. */
export type Clock = { now(): number; sleep(ms: number): Promise<void> };

const realClock: Clock = { now: () => performance.now(), sleep: (ms) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms))) };

interface OpenLoopOptions {
  variant: ClientVariant;
  recorder: LoadRecorder;
  ramp: Ramp;
  /** Spacing of the issue ticks. Default 10 ms (the original used 500 ms). */
  tickMs?: number;
  /** A query not answered this long after issue counts as failed ('timeout'). Default 10 000 ms. */
  timeoutMs?: number;
  clock?: Clock;
  /** Called after every tick (progress). */
  onTick?: (elapsedMs: number) => void;
}

/** Runs the ramp. `durationMs`: from the first tick to the last query settled; `rampMs`: the ramp itself (>= ramp.durationMs). */
export async function runOpenLoop(options: OpenLoopOptions): Promise<{ issued: number; durationMs: number; rampMs: number }> {
  const clock = options.clock ?? realClock;
  const tickMs = Math.max(1, options.tickMs ?? 10);
  const timeoutMs = options.timeoutMs ?? 10_000;
  const { variant, recorder } = options;
  const ticker = new RampTicker(options.ramp);
  // Issue order = deadline order (constant timeout), so expiry is a sweep from the head.
  const inFlight = new Fifo<{ deadline: number; settled: boolean }>();

  const sweep = (now: number): void => {
    for (let entry = inFlight.peek(); entry !== undefined && (entry.settled || entry.deadline <= now); entry = inFlight.peek()) {
      inFlight.shift();
      if (entry.settled) continue;
      entry.settled = true;
      recorder.failed('timeout');
    }
  };

  const issue = (now: number): void => {
    const entry = { deadline: now + timeoutMs, settled: false };
    inFlight.push(entry);
    recorder.issued();
    variant.query(WORKLOAD_SQL, entry.deadline).then(
      () => {
        if (entry.settled) return;
        entry.settled = true;
        recorder.completed((clock.now() - now) * 1000);
      },
      (error: unknown) => {
        if (entry.settled) return;
        entry.settled = true;
        recorder.failed(failureReasonOf(error), error);
      },
    );
  };

  const start = clock.now();
  // Hard bound on iterations in case the clock misbehaves: the ramp's ticks, generously.
  const maxTicks = Math.ceil(options.ramp.durationMs / tickMs) * 4 + 1000;
  for (let ticks = 0; ticks < maxTicks; ticks++) {
    const now = clock.now();
    const elapsed = now - start;
    const count = ticker.tick(elapsed);
    for (let i = 0; i < count; i++) issue(now);
    sweep(now);
    options.onTick?.(elapsed);
    if (elapsed >= options.ramp.durationMs && ticker.finished) break;
    // Aim at the tick grid so timer lateness does not accumulate into a slower schedule.
    await clock.sleep(start + (ticks + 1) * tickMs - clock.now());
  }
  const rampMs = clock.now() - start;

  // Drain: wait for every issued query to settle; the deadline sweep bounds this by timeoutMs.
  const drainUntil = clock.now() + timeoutMs + 1000;
  while (recorder.totals().active > 0 && clock.now() < drainUntil) {
    await clock.sleep(tickMs);
    sweep(clock.now());
  }
  return { issued: ticker.issued, durationMs: clock.now() - start, rampMs };
}

/** Safety bound on the queries of one worker. */
const MAX_QUERIES_PER_WORKER = 10_000_000;

type ClosedLoopOptions = { variant: ClientVariant; recorder: LoadRecorder; workers: number; durationMs: number; timeoutMs: number };

/** K workers, each issuing the next query as soon as the previous one returns (capacity only, never latency). */
export async function runClosedLoop(options: ClosedLoopOptions): Promise<void> {
  const end = performance.now() + options.durationMs;
  const worker = async (): Promise<void> => {
    for (let n = 0; n < MAX_QUERIES_PER_WORKER && performance.now() < end; n++) {
      const t0 = performance.now();
      options.recorder.issued();
      try {
        await options.variant.query(WORKLOAD_SQL, t0 + options.timeoutMs);
        options.recorder.completed((performance.now() - t0) * 1000);
      } catch (error) {
        options.recorder.failed(failureReasonOf(error), error);
      }
    }
  };
  await Promise.all(Array.from({ length: options.workers }, worker));
}
