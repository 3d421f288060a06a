// A clock the test moves by hand: timers fire in deadline order when `advance` passes them, never
// on their own. Pools and sessions built with it have deterministic time: no test sleeps.
import type { Clock, Timer } from '../../src/runtime/clock.js';

interface Entry {
  readonly at: number;
  readonly seq: number;
  readonly fn: () => void;
}

export class ManualClock implements Clock {
  private time = 0;
  private seq = 0;
  private readonly timers = new Map<Timer, Entry>();

  now(): number {
    return this.time;
  }

  setTimer(fn: () => void, ms: number): Timer {
    const t = {} as Timer;
    this.timers.set(t, { at: this.time + Math.max(0, ms), seq: this.seq++, fn });
    return t;
  }

  clearTimer(timer: Timer): void {
    this.timers.delete(timer);
  }

  /** Timers armed and not fired or cleared. */
  get pending(): number {
    return this.timers.size;
  }

  /** Timers due exactly at `at` (e.g. `now() + delay` for those armed now with `delay`). */
  timersDue(at: number): number {
    let n = 0;
    for (const e of this.timers.values()) if (e.at === at) n++;
    return n;
  }

  /** Moves time forward by `ms`, firing every timer due on the way (including ones they arm). */
  advance(ms: number): void {
    const end = this.time + ms;
    for (;;) {
      let next: [Timer, Entry] | null = null;
      for (const e of this.timers) if (e[1].at <= end && (next === null || e[1].at < next[1].at || (e[1].at === next[1].at && e[1].seq < next[1].seq))) next = e;
      if (next === null) break;
      this.timers.delete(next[0]);
      this.time = Math.max(this.time, next[1].at);
      next[1].fn();
    }
    this.time = end;
  }
}

/**
 * Lets the event loop run a few turns (I/O included) while the clock stands still: what a test
 * gives the pooler before checking that a timer not yet due has not fired (nothing answered yet).
 */
export async function turns(n = 5): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((r) => setTimeout(r, 5));
}
