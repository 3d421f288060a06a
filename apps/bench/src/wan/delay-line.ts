// One direction of the WAN: a FIFO of items that must come out `delayMs` after they went in.
// The delay is the same for every item, so FIFO order is due-time order and ONE timer, aimed at
// the head, serves the whole queue (a timer per packet costs more than the relaying itself).
// Node timers fire 0.4-0.8 ms late (1 ms libuv granularity plus event-loop work); the line measures
// its own lateness and aims that much early, but never releases an item before it is due: the
// last fraction of a millisecond is waited out turn by turn (setImmediate), so the delay is a
// lower bound (an early emulator would understate the RTT and flatter whatever runs over it).
import { performance } from 'node:perf_hooks';

export interface DelayLineOptions {
  delayMs: number;
  /** Items held at most; beyond it new items are dropped (counted as overflow). */
  maxItems: number;
  /** Bytes held at most; beyond it new items are dropped. */
  maxBytes: number;
}

export interface DelayLineStats {
  passed: number;
  passedBytes: number;
  overflowDrops: number;
  queued: number;
  queuedBytes: number;
  maxQueued: number;
  /** Current estimate of how late the timer fires, in ms (what the line aims early by). */
  timerLatenessMs: number;
  /** Mean of (release time - due time) over released items, in ms: the residual error. */
  meanReleaseErrorMs: number;
}

/** Below this wait a timer (1 ms granularity) would overshoot: wait turn by turn instead. */
const SPIN_BELOW_MS = 1;
/** Weight of a new lateness sample in the moving average. */
const LATENESS_ALPHA = 0.1;

/** Where a relay puts what it read: a delay line, or an adapter onto a shared one. */
export interface Sink<T> {
  /** False when the item was dropped (queue full or closed). */
  push(item: T, size: number): boolean;
}

export class DelayLine<T> implements Sink<T> {
  // A ring of parallel arrays would be faster still; a plain array with a moving head index and
  // occasional compaction is simple and costs ~nothing at tens of thousands of items per second.
  private items: T[] = [];
  private due: number[] = [];
  private sizes: number[] = [];
  private head = 0;
  private bytes = 0;
  private timer: { kind: 'timeout'; handle: NodeJS.Timeout } | { kind: 'immediate'; handle: NodeJS.Immediate } | null = null;
  private timerTarget = 0;
  private lateness = 0.5; // ms, the TOOLCHAIN-measured typical value until we measure our own
  private closed = false;
  private readonly counters = { passed: 0, passedBytes: 0, overflowDrops: 0, maxQueued: 0, errorSum: 0 };

  constructor(
    private readonly options: DelayLineOptions,
    private readonly deliver: (item: T) => void,
  ) {}

  get delayMs(): number {
    return this.options.delayMs;
  }

  /** Queues `item`; false if it was dropped because the line is full (or closed). */
  push(item: T, size: number): boolean {
    if (this.closed) return false;
    const queued = this.items.length - this.head;
    if (queued >= this.options.maxItems || this.bytes + size > this.options.maxBytes) {
      this.counters.overflowDrops++;
      return false;
    }
    if (this.options.delayMs <= 0 && queued === 0) {
      this.release(item, size, 0);
      return true;
    }
    this.items.push(item);
    this.due.push(performance.now() + this.options.delayMs);
    this.sizes.push(size);
    this.bytes += size;
    if (queued + 1 > this.counters.maxQueued) this.counters.maxQueued = queued + 1;
    if (this.timer === null) this.arm();
    return true;
  }

  /** Drops everything queued and stops the timer; later pushes are refused. */
  close(): void {
    this.closed = true;
    this.cancelTimer();
    this.items = [];
    this.due = [];
    this.sizes = [];
    this.head = 0;
    this.bytes = 0;
  }

  stats(): DelayLineStats {
    const c = this.counters;
    return {
      passed: c.passed,
      passedBytes: c.passedBytes,
      overflowDrops: c.overflowDrops,
      queued: this.items.length - this.head,
      queuedBytes: this.bytes,
      maxQueued: c.maxQueued,
      timerLatenessMs: this.lateness,
      meanReleaseErrorMs: c.passed === 0 ? 0 : c.errorSum / c.passed,
    };
  }

  private cancelTimer(): void {
    const t = this.timer;
    this.timer = null;
    if (t === null) return;
    if (t.kind === 'timeout') clearTimeout(t.handle);
    else clearImmediate(t.handle);
  }

  private arm(): void {
    const headDue = this.due[this.head];
    if (headDue === undefined) return;
    const now = performance.now();
    if (headDue - now < SPIN_BELOW_MS + this.lateness) {
      this.timerTarget = now;
      this.timer = { kind: 'immediate', handle: setImmediate(this.onTimer) };
      return;
    }
    this.timerTarget = headDue - this.lateness - SPIN_BELOW_MS / 2;
    this.timer = { kind: 'timeout', handle: setTimeout(this.onTimer, Math.max(0, this.timerTarget - now)) };
  }

  private readonly onTimer = (): void => {
    const wasTimeout = this.timer?.kind === 'timeout';
    this.timer = null;
    const now = performance.now();
    // Learn how late a timer was relative to what we asked for (never negative: early firing is
    // libuv rounding, not a reason to aim later). Turn-by-turn waits teach nothing.
    if (wasTimeout) this.lateness += LATENESS_ALPHA * (Math.min(Math.max(0, now - this.timerTarget), 5) - this.lateness);
    while (this.head < this.items.length) {
      const due = this.due[this.head] as number;
      if (due > now) break;
      const item = this.items[this.head] as T;
      const size = this.sizes[this.head] as number;
      this.head++;
      this.bytes -= size;
      this.release(item, size, now - due);
      if (this.closed) return; // deliver() may close the emulator
    }
    this.compact();
    if (this.head < this.items.length) this.arm();
  };

  private release(item: T, size: number, errorMs: number): void {
    this.counters.passed++;
    this.counters.passedBytes += size;
    this.counters.errorSum += errorMs;
    this.deliver(item);
  }

  private compact(): void {
    if (this.head === this.items.length) {
      this.items.length = 0;
      this.due.length = 0;
      this.sizes.length = 0;
      this.head = 0;
    } else if (this.head > 4096 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.due = this.due.slice(this.head);
      this.sizes = this.sizes.slice(this.head);
      this.head = 0;
    }
  }
}
