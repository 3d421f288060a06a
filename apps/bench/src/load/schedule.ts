// The open-loop schedule: the offered rate ramps linearly from startRate to endRate (q/s) over durationMs; queries are due by
// its integral, floor(N(t)), whatever the tick spacing (10 ms smooth, 500 ms the original's steps), the same total either way.

export type Ramp = { startRate: number; endRate: number; durationMs: number };

/** Queries due by `elapsedMs` into the ramp: floor(start*t + (end-start)*t^2/(2*D)), t clamped to D. */
export function dueBy(ramp: Ramp, elapsedMs: number): number {
  const d = ramp.durationMs / 1000;
  if (d <= 0) return 0;
  const t = Math.min(d, Math.max(0, elapsedMs / 1000));
  const exact = ramp.startRate * t + ((ramp.endRate - ramp.startRate) * t * t) / (2 * d);
  // The epsilon keeps exact integers (e.g. 150.00000000000003 or 149.99999999999997) at their value.
  return Math.max(0, Math.floor(exact + 1e-9));
}

/** Every query the ramp offers: the area under the rate line. */
export const offeredTotal = (ramp: Ramp): number => dueBy(ramp, ramp.durationMs);

/** Turns clock readings into "issue this many now". */
export class RampTicker {
  private issuedSoFar = 0;

  /** maxPerTick bounds one burst (after a stalled event loop); the rest is issued on later ticks, not dropped. */
  constructor(readonly ramp: Ramp, private readonly maxPerTick = 100_000) {}

  get issued(): number {
    return this.issuedSoFar;
  }

  /** How many queries to issue at this instant (elapsed ms since the ramp started). */
  tick(elapsedMs: number): number {
    const count = Math.min(this.maxPerTick, Math.max(0, dueBy(this.ramp, elapsedMs) - this.issuedSoFar));
    this.issuedSoFar += count;
    return count;
  }

  /** True once everything the ramp offers has been issued. */
  get finished(): boolean {
    return this.issuedSoFar >= offeredTotal(this.ramp);
  }
}
