import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Clock } from './generators.js';
import { runOpenLoop } from './generators.js';
import { RampTicker, dueBy, offeredTotal } from './schedule.js';
import type { ClientVariant } from './variant.js';
import { LoadRecorder } from '../telemetry/recorder.js';

/** A clock whose sleep advances time instantly. */
class FakeClock implements Clock {
  private t = 0;
  now(): number {
    return this.t;
  }
  async sleep(ms: number): Promise<void> {
    this.t += Math.max(0, ms);
    await Promise.resolve();
  }
}

describe('ramp schedule', () => {
  const ramp = { startRate: 0, endRate: 1000, durationMs: 1000 };

  it('is the integral of a linear rate', () => {
    // N(t) = 1000 t^2 / 2 for a 0 -> 1000 q/s ramp over 1 s.
    expect(dueBy(ramp, 0)).toBe(0);
    expect(dueBy(ramp, 100)).toBe(5);
    expect(dueBy(ramp, 500)).toBe(125);
    expect(dueBy(ramp, 1000)).toBe(500);
    expect(dueBy(ramp, 5000)).toBe(500); // clamped to the ramp's end
    expect(offeredTotal({ startRate: 100, endRate: 5000, durationMs: 30_000 })).toBe(76_500);
    // The original's real ramp (0 -> ~10k q/s over 30 s) offered ~150k queries (147,480 in its CSVs).
    expect(offeredTotal({ startRate: 0, endRate: 10_000, durationMs: 30_000 })).toBe(150_000);
  });

  it('issues exactly the due count at each tick, whatever the spacing', () => {
    const ticker = new RampTicker({ startRate: 100, endRate: 300, durationMs: 2000 });
    // N(t) = 100 t + 50 t^2
    expect(ticker.tick(0)).toBe(0);
    expect(ticker.tick(500)).toBe(62); // 50 + 12.5
    expect(ticker.tick(1000)).toBe(150 - 62);
    expect(ticker.tick(1000)).toBe(0); // same instant again: nothing more is due
    expect(ticker.tick(2000)).toBe(400 - 150);
    expect(ticker.finished).toBe(true);
    expect(ticker.tick(9999)).toBe(0);
  });

  it('sums to the integral for any increasing tick times (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 5000 }),
        fc.integer({ min: 0, max: 5000 }),
        fc.integer({ min: 1, max: 20_000 }),
        fc.array(fc.integer({ min: 0, max: 25_000 }), { maxLength: 200 }),
        (startRate, endRate, durationMs, times) => {
          const r = { startRate, endRate, durationMs };
          const ticker = new RampTicker(r);
          let sum = 0;
          for (const t of [...times].sort((a, b) => a - b)) {
            sum += ticker.tick(t);
            expect(sum).toBe(dueBy(r, t));
          }
          sum += ticker.tick(durationMs);
          expect(sum).toBe(offeredTotal(r));
        },
      ),
    );
  });

  it('bounds one burst and catches up on later ticks', () => {
    const ticker = new RampTicker({ startRate: 1000, endRate: 1000, durationMs: 1000 }, 100);
    expect(ticker.tick(1000)).toBe(100);
    expect(ticker.tick(1000)).toBe(100);
    expect(ticker.issued).toBe(200);
  });
});

function instantVariant(): ClientVariant & { calls: number } {
  return {
    name: 'instant',
    sessions: 1,
    calls: 0,
    open: async () => undefined,
    close: async () => undefined,
    async query() {
      this.calls += 1;
    },
  };
}

describe('open-loop generator on a fake clock', () => {
  it('issues the whole schedule, tick by tick, and every query is answered', async () => {
    const clock = new FakeClock();
    const variant = instantVariant();
    const recorder = new LoadRecorder();
    const perTick: number[] = [];
    let last = 0;
    const ramp = { startRate: 100, endRate: 500, durationMs: 2000 };
    const result = await runOpenLoop({
      variant,
      recorder,
      ramp,
      tickMs: 50,
      clock,
      onTick: () => {
        perTick.push(variant.calls - last);
        last = variant.calls;
      },
    });
    expect(result.issued).toBe(offeredTotal(ramp)); // 600
    expect(variant.calls).toBe(600);
    expect(recorder.totals()).toEqual({ issued: 600, processed: 600, failed: 0, active: 0 });
    // 41 ticks at 0, 50, ..., 2000 ms; the first 50 ms of a 100 -> 500 q/s ramp offer 5 queries.
    expect(perTick).toHaveLength(41);
    expect(perTick[1]).toBe(dueBy(ramp, 50));
    expect(perTick.reduce((a, b) => a + b, 0)).toBe(600);
  });

  it('ends against a variant that never answers: everything times out', async () => {
    const clock = new FakeClock();
    const hung: ClientVariant = {
      name: 'hung',
      sessions: 1,
      open: async () => undefined,
      close: async () => undefined,
      query: () => new Promise<void>(() => undefined),
    };
    const recorder = new LoadRecorder();
    const result = await runOpenLoop({ variant: hung, recorder, ramp: { startRate: 10, endRate: 10, durationMs: 1000 }, tickMs: 10, timeoutMs: 500, clock });
    expect(result.issued).toBe(10);
    expect(recorder.totals()).toEqual({ issued: 10, processed: 0, failed: 10, active: 0 });
    expect(recorder.failures.timeout).toBe(10);
    // Fake time, so exact: the 10th query is due at the ramp's end (1000 ms) and is declared failed
    // at its deadline, timeoutMs later, by the drain's 10 ms sweeps; the run ends right there.
    expect(result.rampMs).toBe(1000);
    expect(result.durationMs).toBe(1000 + 500);
  });
});
