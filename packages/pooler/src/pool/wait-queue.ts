// The clients waiting for a server connection of one pool, in arrival order, each with its
// arrival time (clock ms). Every waiter of a pool has the same time limit (query_wait_timeout, or
// the shorter outage wait while the server is down), so arrival order is deadline order and one
// timer, aimed at the oldest waiter, serves them all (no timer per wait). A client served at once
// never enters it. A waiter whose time is up gets the error `expired` makes for it.
//
// Two arrays read from `head` rather than a Map: under a saturated pool (pgbench -c 50 on 20
// connections) nearly every transaction waits, and an add and a shift are then an array store and
// an index step, with no hashing and no object per shift. A withdrawn waiter (its client left) is
// found by a scan (linear in the waiters: 10,000 waiting clients all leaving scan ~5e7 slots in
// all, tens of ms spread over their disconnects) and leaves a hole; holes at the head are stepped
// over, and the arrays are compacted once the consumed part is the larger half.
import type { Waiter } from '../backend/link.js';
import type { Clock, Timer } from '../runtime/clock.js';
import type { EncodedError } from '../runtime/encoded-error.js';

/** The consumed part of the arrays is dropped once it is this long and at least half of them. */
const COMPACT_AT = 64;

export class WaitQueue {
  /** `waiters[head, length)`: the waiters in arrival order; a withdrawn one is a null (never at `head`). */
  private waiters: (Waiter | null)[] = [];
  /** `since[i]`: when `waiters[i]` arrived (clock ms). */
  private since: number[] = [];
  private head = 0;
  private count = 0;
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
    return this.count;
  }

  /** `w` waits from `now`. A waiter is added once per wait: a session asks for a backend only from idle, and again only after it was served, failed or withdrew. */
  add(w: Waiter, now: number): void {
    this.waiters.push(w);
    this.since.push(now);
    this.count++;
    this.arm();
  }

  /** Takes `w` out (the timer re-aims itself when it fires). */
  delete(w: Waiter): void {
    const i = this.waiters.indexOf(w, this.head);
    if (i < 0) return;
    this.waiters[i] = null;
    this.count--;
    if (i === this.head) this.stepHead();
  }

  /** When the longest waiter arrived (clock ms); only while size > 0. */
  oldestSince(): number {
    return this.since[this.head] ?? 0;
  }

  /** The longest waiter, taken out (see oldestSince for how long it waited). */
  shift(): Waiter | undefined {
    if (this.count === 0) return undefined;
    const w = this.waiters[this.head]!;
    this.waiters[this.head] = null;
    this.count--;
    this.stepHead();
    return w;
  }

  /** How long the longest waiter has waited so far (ms; 0 when none waits). */
  maxWaitMs(now: number): number {
    return this.count === 0 ? 0 : now - this.oldestSince();
  }

  /** Every waiter, taken out. */
  takeAll(): Waiter[] {
    const all: Waiter[] = [];
    for (let i = this.head; i < this.waiters.length; i++) {
      const w = this.waiters[i];
      if (w !== null && w !== undefined) all.push(w);
    }
    this.waiters = [];
    this.since = [];
    this.head = 0;
    this.count = 0;
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

  /** `head` past the holes to the next waiter (or the end), and the consumed part dropped when large. */
  private stepHead(): void {
    const waiters = this.waiters;
    let h = this.head;
    while (h < waiters.length && waiters[h] === null) h++;
    if (h === waiters.length) {
      // Empty: start over (the arrays keep their capacity).
      waiters.length = 0;
      this.since.length = 0;
      h = 0;
    } else if (h >= COMPACT_AT && h * 2 >= waiters.length) {
      waiters.copyWithin(0, h);
      waiters.length -= h;
      this.since.copyWithin(0, h);
      this.since.length -= h;
      h = 0;
    }
    this.head = h;
  }

  /** One timer for the oldest waiter, if there is none yet and waits have a limit. */
  private arm(): void {
    if (this.timer !== null || this.stopped || this.count === 0) return;
    const ms = this.limitMs();
    if (ms <= 0) return;
    this.timer = this.clock.setTimer(this.expire, Math.max(0, this.oldestSince() + ms - this.clock.now()));
  }

  /** Every waiter past its deadline gets the error; then the timer aims at the next one. */
  private readonly expire = (): void => {
    this.timer = null;
    const ms = this.limitMs();
    const now = this.clock.now();
    let error: EncodedError | undefined;
    // Arrival order is deadline order. Each is taken out before its error, which may end its
    // session and so call delete() (a no-op by then).
    while (ms > 0 && this.count > 0 && this.oldestSince() + ms <= now) {
      const w = this.shift()!;
      this.timeoutsTotal++;
      w.onError((error ??= this.expired(ms)));
    }
    this.arm();
  };
}
