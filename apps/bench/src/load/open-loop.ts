// The open-loop load generator: queries are issued on the ramp's schedule whether or not earlier
// ones have finished (a closed loop would slow down with the system under test and hide overload,
// the "coordinated omission" trap). Every query either completes, fails, or is declared failed at
// its deadline, so the run always ends within ramp + timeout + drain, even against a hung variant.
import type { LoadRecorder } from '../telemetry/recorder.js';
import type { Clock } from './clock.js';
import { realClock } from './clock.js';
import type { Ramp } from './schedule.js';
import { RampTicker } from './schedule.js';
import type { ClientVariant } from './variant.js';
import { WORKLOAD_SQL, failureReasonOf } from './variant.js';

export interface OpenLoopOptions {
  variant: ClientVariant;
  recorder: LoadRecorder;
  ramp: Ramp;
  /** Spacing of the issue ticks. Default 10 ms (the original used 500 ms). */
  tickMs?: number;
  /** A query not answered this long after issue counts as failed ('timeout'). Default 10 000 ms. */
  timeoutMs?: number;
  sql?: string;
  clock?: Clock;
  /** Called after every tick (progress). */
  onTick?: (elapsedMs: number) => void;
}

export interface OpenLoopResult {
  issued: number;
  /** From the first tick to the last query settled. */
  durationMs: number;
  /** Time the ramp itself took (>= ramp.durationMs). */
  rampMs: number;
}

interface InFlight {
  deadline: number;
  settled: boolean;
}

export async function runOpenLoop(options: OpenLoopOptions): Promise<OpenLoopResult> {
  const clock = options.clock ?? realClock;
  const tickMs = Math.max(1, options.tickMs ?? 10);
  const timeoutMs = options.timeoutMs ?? 10_000;
  const sql = options.sql ?? WORKLOAD_SQL;
  const { variant, recorder } = options;
  const ticker = new RampTicker(options.ramp);
  // Issue order = deadline order (constant timeout), so expiry is a sweep from the head.
  let inFlight: InFlight[] = [];
  let head = 0;

  const sweep = (now: number): void => {
    while (head < inFlight.length) {
      const entry = inFlight[head];
      if (entry === undefined) break;
      if (!entry.settled) {
        if (entry.deadline > now) break;
        entry.settled = true;
        recorder.failed('timeout');
      }
      head += 1;
    }
    if (head > 4096 && head * 2 > inFlight.length) {
      inFlight = inFlight.slice(head);
      head = 0;
    }
  };

  const issue = (now: number): void => {
    const entry: InFlight = { deadline: now + timeoutMs, settled: false };
    inFlight.push(entry);
    recorder.issued();
    variant.query(sql, entry.deadline).then(
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
  let ticks = 0;
  for (; ticks < maxTicks; ticks++) {
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
  while (recorder.active > 0 && clock.now() < drainUntil) {
    await clock.sleep(tickMs);
    sweep(clock.now());
  }
  return { issued: ticker.issued, durationMs: clock.now() - start, rampMs };
}
