import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Histogram, nearestRank } from './histogram.js';

const truth = (sorted: readonly number[], p: number): number => sorted[Math.max(1, Math.ceil((p / 100) * sorted.length - 1e-9)) - 1] ?? 0;

describe('Histogram', () => {
  it('is exact for small values', () => {
    const h = new Histogram();
    for (let v = 1; v <= 100; v++) h.record(v);
    expect(h.percentile(50)).toBe(50);
    expect(h.percentile(99)).toBe(99);
    expect(h.percentile(100)).toBe(100);
    expect(h.percentile(0)).toBe(1);
    expect(h.mean).toBe(50.5);
    expect(h.max).toBe(100);
  });

  it('is empty-safe', () => {
    const h = new Histogram();
    expect([h.count, h.percentile(99), h.max, h.mean]).toEqual([0, 0, 0, 0]);
  });

  it('matches the sorted-array nearest-rank percentile within 1/128 (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 2_000_000_000 }), { minLength: 1, maxLength: 400 }),
        fc.constantFrom(0, 1, 10, 25, 50, 75, 90, 99, 99.9, 100),
        (values, p) => {
          const h = new Histogram();
          for (const v of values) h.record(v);
          const sorted = [...values].sort((a, b) => a - b);
          const expected = truth(sorted, p);
          const got = h.percentile(p);
          expect(got).toBeGreaterThanOrEqual(expected);
          expect(got - expected).toBeLessThanOrEqual(expected / 128 + 1e-9);
          expect(h.max).toBe(sorted[sorted.length - 1]);
          expect(h.count).toBe(values.length);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('adds interval histograms into a run histogram', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(1_000_000)), fc.array(fc.nat(1_000_000)), (a, b) => {
        const ha = new Histogram();
        const hb = new Histogram();
        const all = new Histogram();
        for (const v of a) {
          ha.record(v);
          all.record(v);
        }
        for (const v of b) {
          hb.record(v);
          all.record(v);
        }
        ha.add(hb);
        for (const p of [50, 99, 100]) expect(ha.percentile(p)).toBe(all.percentile(p));
        expect(ha.count).toBe(a.length + b.length);
      }),
    );
  });

  it('uses the nearest-rank definition', () => {
    expect(nearestRank(99, 100)).toBe(99);
    expect(nearestRank(50, 3)).toBe(2);
    expect(nearestRank(0, 10)).toBe(1);
    expect(nearestRank(100, 10)).toBe(10);
  });
});
