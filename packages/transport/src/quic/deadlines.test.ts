// The endpoint's timer heap against a model, under fake timers: every scheduled deadline fires
// once the clock passes it (never before), a moved deadline fires at its new time only, a cleared
// one never fires, and however many deadlines there are, at most one Node timer is pending.
import fc from 'fast-check';
import { afterEach, beforeEach, expect, test, vi } from 'vitest';
import { Deadline, DeadlineQueue } from './deadlines.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

type Op = { kind: 'set'; d: number; inMs: number } | { kind: 'clear'; d: number } | { kind: 'advance'; ms: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('set' as const), d: fc.integer({ min: 0, max: 7 }), inMs: fc.integer({ min: 0, max: 50 }) }),
  fc.record({ kind: fc.constant('clear' as const), d: fc.integer({ min: 0, max: 7 }) }),
  fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 30 }) }),
);

test('deadlines fire when due, once, never early; moved and cleared ones behave (model check)', () => {
  fc.assert(
    fc.property(fc.array(op, { maxLength: 80 }), (ops) => {
      vi.setSystemTime(0);
      const q = new DeadlineQueue(() => Date.now());
      const fired: Array<{ d: number; at: number }> = [];
      const deadlines = Array.from({ length: 8 }, (_, i) => new Deadline(() => fired.push({ d: i, at: Date.now() })));
      /** The model: when each deadline is due, or null. */
      const due: Array<number | null> = deadlines.map(() => null);
      const check = (): void => {
        // Everything the model says is past due has fired and was unscheduled.
        for (let i = 0; i < 8; i++) {
          const at = due[i]!;
          if (at !== null && at <= Date.now()) {
            const f = fired.filter((x) => x.d === i);
            expect(f.length, `deadline ${i} due at ${at}`).toBe(1);
            expect(f[0]!.at).toBeGreaterThanOrEqual(at); // never early
            expect(deadlines[i]!.scheduled).toBe(false);
            due[i] = null;
            fired.splice(fired.indexOf(f[0]!), 1);
          }
        }
        // Nothing fired that was not due.
        expect(fired).toEqual([]);
        expect(vi.getTimerCount()).toBeLessThanOrEqual(1);
      };
      for (const o of ops) {
        switch (o.kind) {
          case 'set':
            q.set(deadlines[o.d]!, Date.now() + o.inMs);
            due[o.d] = Date.now() + o.inMs;
            break;
          case 'clear':
            q.clear(deadlines[o.d]!);
            due[o.d] = null;
            break;
          case 'advance':
            vi.advanceTimersByTime(o.ms);
            check();
            break;
          default: {
            const never: never = o;
            throw new Error(`unknown op ${JSON.stringify(never)}`);
          }
        }
      }
      vi.advanceTimersByTime(100);
      check();
      expect(q.size).toBe(0);
      q.close();
    }),
    { numRuns: 300 },
  );
});

test('close() drops every deadline and its timer', () => {
  const q = new DeadlineQueue(() => Date.now());
  const fire = vi.fn();
  for (let i = 0; i < 100; i++) q.set(new Deadline(fire), Date.now() + i);
  expect(vi.getTimerCount()).toBe(1);
  q.close();
  vi.advanceTimersByTime(1_000);
  expect(fire).not.toHaveBeenCalled();
  expect(vi.getTimerCount()).toBe(0);
});
