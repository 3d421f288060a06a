// The one timer a connection needs, driven by quiche's `timeout()`. It is lazy: an armed timer is
// kept unless the new deadline is clearly earlier (quiche's deadline moves later with almost every
// packet; re-arming each time would allocate a timer per packet). When it fires early relative to
// the current deadline it simply re-arms for the remaining time.

export class LazyTimer {
  private timer: NodeJS.Timeout | null = null;
  private deadline = Infinity;

  /**
   * @param remaining quiche's `timeout()`: ms until the deadline, or null for none
   * @param fire called when the deadline has passed (quiche's `onTimeout()` then a flush)
   */
  constructor(
    private readonly remaining: () => number | null,
    private readonly fire: () => void,
  ) {}

  /** Re-evaluates after quiche's state changed (`now` = Date.now() of this flush). */
  update(now: number): void {
    const t = this.remaining();
    if (t === null) {
      this.cancel();
      return;
    }
    const deadline = now + t;
    if (this.timer !== null && deadline >= this.deadline - 1) return;
    if (this.timer !== null) clearTimeout(this.timer);
    this.deadline = deadline;
    this.timer = setTimeout(this.onTimer, t);
  }

  cancel(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.deadline = Infinity;
  }

  private readonly onTimer = (): void => {
    this.timer = null;
    const t = this.remaining();
    if (t !== null && t > 0) {
      this.deadline = Date.now() + t;
      this.timer = setTimeout(this.onTimer, t);
      return;
    }
    this.deadline = Infinity;
    this.fire();
  };
}
