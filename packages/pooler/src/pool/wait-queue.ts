// The clients waiting for a server connection of one pool, in arrival order, each with its
// arrival time (clock ms). Every waiter of a pool has the same time limit (query_wait_timeout, or
// the shorter outage wait while the server is down), so arrival order is deadline order and one
// timer, aimed at the oldest waiter, serves them all (no timer per wait). A client served at once
// never enters it. A waiter whose time is up gets the error `expired` makes for it.
import type { Waiter } from '../backend/link.js';
import type { Clock, Timer } from '../runtime/clock.js';
import type { EncodedError } from '../runtime/encoded-error.js';

export class WaitQueue {
  private readonly waiters = new Map<Waiter, number>();
  private timer: Timer | null = null;
  private stopped = false;
  /** Waiters whose time ran out. */
  timeoutsTotal = 0;

  constructor(
    private readonly clock: Clock,
    /** The limit now (ms; 0 = none). */
    private readonly limitMs: () => number,
    /** The error a waiter whose time ran out gets. */
    private readonly expired: (limitMs: number) => EncodedError,
  ) {}

  get size(): number {
    return this.waiters.size;
  }

  has(w: Waiter): boolean {
    return this.waiters.has(w);
  }

  add(w: Waiter, now: number): void {
    this.waiters.set(w, now);
    this.arm();
  }

  /** Takes `w` out (the timer re-aims itself when it fires). */
  delete(w: Waiter): void {
    this.waiters.delete(w);
  }

  /** The longest waiter, taken out, and how long it waited (ms). */
  shift(now: number): { readonly waiter: Waiter; readonly waitedMs: number } | undefined {
    const first = this.waiters.entries().next();
    if (first.done === true) return undefined;
    const [waiter, since] = first.value;
    this.waiters.delete(waiter);
    return { waiter, waitedMs: now - since };
  }

  /** How long the longest waiter has waited so far (ms; 0 when none waits). */
  maxWaitMs(now: number): number {
    const first = this.waiters.values().next();
    return first.done === true ? 0 : now - first.value;
  }

  /** Every waiter, taken out. */
  takeAll(): Waiter[] {
    const all = [...this.waiters.keys()];
    this.waiters.clear();
    return all;
  }

  /** The limit changed (an outage began or ended): the timer aims again. */
  rearm(): void {
    if (this.timer !== null) this.clock.clearTimer(this.timer);
    this.timer = null;
    this.arm();
  }

  /** No timer any more (the pool closed). */
  stop(): void {
    this.stopped = true;
    if (this.timer !== null) this.clock.clearTimer(this.timer);
    this.timer = null;
  }

  /** One timer for the oldest waiter, if there is none yet and waits have a limit. */
  private arm(): void {
    if (this.timer !== null || this.stopped) return;
    const ms = this.limitMs();
    if (ms <= 0) return;
    const first = this.waiters.values().next();
    if (first.done === true) return;
    this.timer = this.clock.setTimer(this.expire, Math.max(0, first.value + ms - this.clock.now()));
  }

  /** Every waiter past its deadline gets the error; then the timer aims at the next one. */
  private readonly expire = (): void => {
    this.timer = null;
    const ms = this.limitMs();
    const now = this.clock.now();
    let error: EncodedError | undefined;
    for (const [w, since] of this.waiters) {
      if (ms <= 0 || since + ms > now) break; // arrival order is deadline order
      this.waiters.delete(w);
      this.timeoutsTotal++;
      w.onError((error ??= this.expired(ms)));
    }
    this.arm();
  };
}
