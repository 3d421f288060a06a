// All timers of an endpoint in one structure: a binary min-heap of deadlines and ONE Node timer
// aimed at the earliest. Every connection has two deadlines in it (quiche's own timeout and the
// delayed ACK), so thousands of connections cost one armed timer, and moving a deadline is a
// heap step, not a new Timeout object. The Node timer is re-armed only when the earliest
// deadline moves earlier; when it fires before a deadline (that moved later) it just re-arms.

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

export class DeadlineQueue {
  private readonly heap: Deadline[] = [];
  private timer: NodeJS.Timeout | null = null;
  private timerAt = Infinity;
  private closed = false;

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
      const earlier = at < d.at;
      d.at = at;
      if (earlier) this.up(d.index);
      else this.down(d.index);
    }
    if (this.heap[0] === d) this.arm();
  }

  clear(d: Deadline): void {
    const i = d.index;
    if (i < 0) return;
    d.index = -1;
    d.at = Infinity;
    const last = this.heap.pop()!;
    if (last === d) return;
    this.heap[i] = last;
    last.index = i;
    this.up(i);
    this.down(last.index);
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
    const top = this.heap[0];
    if (top === undefined) return; // a stray timer firing finds nothing due and stops
    if (this.timer !== null && this.timerAt <= top.at) return;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timerAt = top.at;
    this.timer = setTimeout(this.onTimer, Math.max(0, top.at - this.now()));
  }

  private readonly onTimer = (): void => {
    this.timer = null;
    this.timerAt = Infinity;
    const now = this.now();
    // Node's timers have millisecond resolution: what is due within it fires now.
    while (!this.closed) {
      const top = this.heap[0];
      if (top === undefined || top.at > now + 0.5) break;
      this.clear(top);
      top.fire();
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
