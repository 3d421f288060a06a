// All timers of an endpoint in one structure: a binary min-heap of deadlines and ONE Node timer
// aimed at the earliest. Every connection has its deadlines in it (quiche's own timeout, the
// delayed ACK, a held FIN), so thousands of connections cost one armed timer, and moving a
// deadline is a heap step, not a new Timeout object. The Node timer follows the earliest
// deadline: at once when it moves earlier, and when it moves more than REAIM_LATER_MS later (an
// ACK that stops a connection's loss timer), since a timer that fires for nothing due is a
// wake-up of the whole process; within that slack it fires early, finds nothing due and re-arms.

export class Deadline {
  /** Absolute time (ms, the queue's clock); Infinity while not scheduled. */
  at = Infinity;
  /** Position in the heap, -1 while not scheduled. */
  index = -1;
  constructor(readonly fire: () => void) {}

  get scheduled(): boolean {
    return this.index >= 0;
  }
}

/** The Node timer is moved later only when the earliest deadline moved later by more than this. */
const REAIM_LATER_MS = 2;

export class DeadlineQueue {
  private readonly heap: Deadline[] = [];
  private timer: NodeJS.Timeout | null = null;
  private timerAt = Infinity;
  private closed = false;
  /** Firing what is due: the timer is armed once, afterwards. */
  private firing = false;

  constructor(readonly now: () => number = Date.now) {}

  /** Schedules `d` at `at` (or moves it there). */
  set(d: Deadline, at: number): void {
    if (this.closed) return;
    if (d.index < 0) {
      d.at = at;
      d.index = this.heap.length;
      this.heap.push(d);
      this.up(d.index);
    } else {
      const wasFirst = d.index === 0;
      const earlier = at < d.at;
      d.at = at;
      if (earlier) this.up(d.index);
      else this.down(d.index);
      if (wasFirst) {
        this.arm();
        return;
      }
    }
    if (this.heap[0] === d) this.arm();
  }

  clear(d: Deadline): void {
    const i = d.index;
    if (i < 0) return;
    d.index = -1;
    d.at = Infinity;
    const last = this.heap.pop()!;
    if (last !== d) {
      this.heap[i] = last;
      last.index = i;
      this.up(i);
      this.down(last.index);
    }
    if (i === 0) this.arm();
  }

  get size(): number {
    return this.heap.length;
  }

  /** No more firing; every deadline is dropped. */
  close(): void {
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    for (const d of this.heap) {
      d.index = -1;
      d.at = Infinity;
    }
    this.heap.length = 0;
  }

  private arm(): void {
    if (this.firing) return;
    const top = this.heap[0];
    const at = top === undefined ? Infinity : top.at;
    if (this.timer !== null) {
      // Aimed early enough, and not so early that it would wake the process for nothing.
      if (this.timerAt <= at && at - this.timerAt <= REAIM_LATER_MS) return;
      clearTimeout(this.timer);
      this.timer = null;
      this.timerAt = Infinity;
    }
    if (top === undefined) return;
    this.timerAt = at;
    this.timer = setTimeout(this.onTimer, Math.max(0, at - this.now()));
  }

  private readonly onTimer = (): void => {
    this.timer = null;
    this.timerAt = Infinity;
    const now = this.now();
    this.firing = true;
    try {
      // Node's timers have millisecond resolution: what is due within it fires now.
      while (!this.closed) {
        const top = this.heap[0];
        if (top === undefined || top.at > now + 0.5) break;
        this.clear(top);
        top.fire();
      }
    } finally {
      this.firing = false;
    }
    if (!this.closed) this.arm();
  };

  private up(i: number): void {
    const h = this.heap;
    const d = h[i]!;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const parent = h[p]!;
      if (parent.at <= d.at) break;
      h[i] = parent;
      parent.index = i;
      i = p;
    }
    h[i] = d;
    d.index = i;
  }

  private down(i: number): void {
    const h = this.heap;
    const n = h.length;
    const d = h[i]!;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && h[r]!.at < h[l]!.at ? r : l;
      const child = h[c]!;
      if (child.at >= d.at) break;
      h[i] = child;
      child.index = i;
      i = c;
    }
    h[i] = d;
    d.index = i;
  }
}
