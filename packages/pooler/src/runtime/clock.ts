// Time for the pooler: every timeout (authentication, idle, wait, lifetime, query) and every
// measured duration goes through one Clock, so tests drive time themselves (test/support/
// manual-clock.ts) instead of sleeping, and durations use a monotonic clock.

/** An armed timer; only its clock can clear it. */
export interface Timer {
  readonly __timer: unique symbol;
}

export interface Clock {
  /** Milliseconds on a monotonic scale (not wall-clock time). */
  now(): number;
  /** Calls `fn` once after `ms`. The timer never keeps the process alive by itself. */
  setTimer(fn: () => void, ms: number): Timer;
  clearTimer(timer: Timer): void;
}

/** The process's own monotonic time and Node timers (unref'd). */
export const realClock: Clock = {
  now: () => performance.now(),
  setTimer(fn, ms) {
    const t = setTimeout(fn, ms);
    t.unref();
    return t as unknown as Timer;
  },
  clearTimer(timer) {
    clearTimeout(timer as unknown as NodeJS.Timeout);
  },
};

/** Calls `fn` every `ms` until the returned function is called. */
export function every(clock: Clock, ms: number, fn: () => void): () => void {
  let timer: Timer | null = null;
  let stopped = false;
  const tick = (): void => {
    if (stopped) return;
    fn();
    if (!stopped) timer = clock.setTimer(tick, ms);
  };
  timer = clock.setTimer(tick, ms);
  return () => {
    stopped = true;
    if (timer !== null) clock.clearTimer(timer);
    timer = null;
  };
}

/**
 * A clock read once per read cycle (the handling of one socket read, see WriteBatcher.beginCycle),
 * as PgBouncer reads its time once per loop turn: a transaction's acquire, release, hand-over and
 * query timing in one read share one reading instead of each calling the system clock. Outside a
 * cycle (timers, promises) every now() reads `clock`. Timers are `clock`'s.
 */
export class CycleClock implements Clock {
  /** The reading of the cycle under way, or -1 (none yet, or no cycle). */
  private reading = -1;
  private depth = 0;

  constructor(private readonly clock: Clock) {}

  now(): number {
    if (this.depth === 0) return this.clock.now();
    if (this.reading < 0) this.reading = this.clock.now();
    return this.reading;
  }

  setTimer(fn: () => void, ms: number): Timer {
    return this.clock.setTimer(fn, ms);
  }

  clearTimer(timer: Timer): void {
    this.clock.clearTimer(timer);
  }

  /** A read cycle starts (cycles nest: the outermost one's reading is shared). */
  beginCycle(): void {
    this.depth++;
  }

  /** A read cycle ends; after the outermost, the next now() reads the clock again. */
  endCycle(): void {
    if (--this.depth === 0) this.reading = -1;
  }
}
