import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../test/support/manual-clock.js';
import type { Waiter } from '../backend/link.js';
import type { EncodedError } from '../runtime/encoded-error.js';
import { WaitQueue } from './wait-queue.js';

/** A waiter that records the error it got and then withdraws from `queue`, as a failed session does (a no-op by then). */
function waiter(id: number, errors: number[], queue: () => WaitQueue): Waiter {
  const self: Waiter = {
    onBackend: () => undefined,
    onError: () => {
      errors.push(id);
      queue().delete(self);
    },
    onBackendMessage: () => undefined,
    onBackendLost: () => undefined,
  };
  return self;
}

const EXPIRED = { type: 'error' } as unknown as EncodedError;

type Op =
  | { readonly kind: 'add' }
  | { readonly kind: 'delete'; readonly pick: number }
  | { readonly kind: 'shift' }
  | { readonly kind: 'advance'; readonly ms: number };

const ops = fc.array(
  fc.oneof(
    { weight: 4, arbitrary: fc.constant<Op>({ kind: 'add' }) },
    { weight: 2, arbitrary: fc.nat(200).map<Op>((pick) => ({ kind: 'delete', pick })) },
    { weight: 3, arbitrary: fc.constant<Op>({ kind: 'shift' }) },
    { weight: 1, arbitrary: fc.integer({ min: 1, max: 40 }).map<Op>((ms) => ({ kind: 'advance', ms })) },
  ),
  { maxLength: 400 },
);

describe('WaitQueue', () => {
  it('keeps arrival order, withdrawals and deadlines as a plain list does (model)', () => {
    fc.assert(
      fc.property(ops, fc.constantFrom(0, 25, 100), (script, limitMs) => {
        const clock = new ManualClock();
        const q = new WaitQueue(clock, () => limitMs, () => EXPIRED);
        const errors: number[] = [];
        const model: { w: Waiter; id: number; since: number }[] = [];
        const expectedErrors: number[] = [];
        const all: Waiter[] = [];
        const ids = new Map<Waiter, number>();
        for (const op of script) {
          switch (op.kind) {
            case 'add': {
              const id = all.length;
              const self = waiter(id, errors, () => q);
              all.push(self);
              ids.set(self, id);
              q.add(self, clock.now());
              model.push({ w: self, id, since: clock.now() });
              break;
            }
            case 'delete': {
              if (all.length === 0) break;
              const w = all[op.pick % all.length]!;
              q.delete(w);
              const i = model.findIndex((m) => m.w === w);
              if (i >= 0) model.splice(i, 1);
              break;
            }
            case 'shift': {
              const oldest = model[0];
              if (oldest !== undefined) expect(q.oldestSince()).toBe(oldest.since);
              const got = q.shift();
              const want = model.shift();
              expect(got === undefined ? undefined : ids.get(got)).toBe(want?.id);
              break;
            }
            case 'advance': {
              clock.advance(op.ms);
              if (limitMs > 0) {
                while (model.length > 0 && model[0]!.since + limitMs <= clock.now()) expectedErrors.push(model.shift()!.id);
              }
              break;
            }
            default: {
              const never: never = op;
              throw new Error(`unknown op ${String(never)}`);
            }
          }
          expect(q.size).toBe(model.length);
          expect(q.maxWaitMs(clock.now())).toBe(model.length === 0 ? 0 : clock.now() - model[0]!.since);
          expect(errors).toEqual(expectedErrors);
        }
        expect(q.timeoutsTotal).toBe(expectedErrors.length);
        expect(q.takeAll().map((w) => ids.get(w))).toEqual(model.map((m) => m.id));
        expect(q.size).toBe(0);
        expect(q.shift()).toBeUndefined();
      }),
      { numRuns: 300 },
    );
  });

  it('compacts what it consumed: a long run of adds and shifts keeps its arrays short', () => {
    const clock = new ManualClock();
    const q = new WaitQueue(clock, () => 0, () => EXPIRED);
    const errors: number[] = [];
    const mk = (id: number): Waiter => waiter(id, errors, () => q);
    // Always 30 waiting, 10,000 served: the arrays never hold more than the waiters and the
    // consumed part (at most twice the waiters once past the compaction threshold).
    for (let i = 0; i < 30; i++) q.add(mk(i), 0);
    for (let i = 30; i < 10_030; i++) {
      q.shift();
      q.add(mk(i), 0);
      const arrays = q as unknown as { waiters: unknown[]; since: unknown[] };
      expect(arrays.waiters.length).toBeLessThanOrEqual(30 + 64 + 30);
      expect(arrays.since.length).toBe(arrays.waiters.length);
    }
    expect(q.size).toBe(30);
    expect(errors).toEqual([]);
  });
});
