// Pool invariants under random acquire/release/withdraw/kill sequences, with fake connections:
// a backend is never held by two clients, every waiter is answered at most once, the pool never
// exceeds poolSize, and everything handed out comes back.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { resolvePoolSettings } from '../config/pool-settings.js';
import type { Backend } from '../backend/backend.js';
import { fakeDeps, tick } from '../../test/support/fake-backend.js';
import { ManualClock } from '../../test/support/manual-clock.js';
import { Pool } from './pool.js';
import type { Waiter } from './pool.js';

type Cmd =
  | { kind: 'acquire' }
  | { kind: 'release'; which: number; status: 'I' | 'T' | 'E'; busy: boolean; dirty: boolean }
  | { kind: 'withdraw'; which: number }
  | { kind: 'kill'; which: number };

const cmd: fc.Arbitrary<Cmd> = fc.oneof(
  fc.constant<Cmd>({ kind: 'acquire' }),
  fc.record({ kind: fc.constant('release' as const), which: fc.nat(20), status: fc.constantFrom('I' as const, 'T' as const, 'E' as const), busy: fc.boolean(), dirty: fc.boolean() }),
  fc.record({ kind: fc.constant('withdraw' as const), which: fc.nat(20) }),
  fc.record({ kind: fc.constant('kill' as const), which: fc.nat(20) }),
);

describe('Pool invariants', () => {
  it('hold for random command sequences', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 4 }), fc.constantFrom(0, 30_000), fc.array(cmd, { maxLength: 40 }), async (poolSize, serverCheckDelayMs, cmds) => {
        const settings = resolvePoolSettings({ poolSize, queryWaitTimeoutMs: 0, poolMode: 'transaction', serverCheckDelayMs });
        const pool = new Pool('db', 'u', settings, { database: 'db', user: 'u', password: undefined, connectTimeoutMs: 1000 }, fakeDeps(new ManualClock()));
        const holders = new Map<Backend, Waiter>();
        const waiting: Waiter[] = [];
        const held: Backend[] = [];
        let lost = 0;
        const newWaiter = (): Waiter => {
          let answered = false;
          const w: Waiter = {
            onBackend(b) {
              expect(answered).toBe(false);
              answered = true;
              expect(holders.has(b)).toBe(false); // never two holders
              expect(b.state).toBe('active');
              holders.set(b, w);
              held.push(b);
              waiting.splice(waiting.indexOf(w), 1);
            },
            onBackendMessage: () => undefined,
            onBackendLost() {
              const b = held.find((x) => holders.get(x) === w)!;
              lost++;
              holders.delete(b);
              held.splice(held.indexOf(b), 1);
            },
            onError() {
              expect(answered).toBe(false);
              answered = true;
              waiting.splice(waiting.indexOf(w), 1);
            },
          };
          return w;
        };
        try {
          for (const c of cmds) {
            switch (c.kind) {
              case 'acquire': {
                const w = newWaiter();
                waiting.push(w);
                pool.acquire(w);
                break;
              }
              case 'release': {
                const b = held[c.which % Math.max(1, held.length)];
                if (b === undefined) break;
                held.splice(held.indexOf(b), 1);
                holders.delete(b);
                pool.release(b, { status: c.status, busy: c.busy, dirty: c.dirty });
                break;
              }
              case 'withdraw': {
                const w = waiting[c.which % Math.max(1, waiting.length)];
                if (w === undefined) break;
                waiting.splice(waiting.indexOf(w), 1);
                pool.withdraw(w);
                break;
              }
              case 'kill': {
                const b = held[c.which % Math.max(1, held.length)];
                b?.stream.destroy();
                break;
              }
            }
            await tick();
            expect(pool.size).toBeLessThanOrEqual(poolSize);
            expect(pool.stats().active).toBe(held.length);
          }
          // Give everything back: every waiter still queued is then served, and released too.
          for (let i = 0; i < 50 && (held.length > 0 || waiting.length > 0); i++) {
            for (const b of held.splice(0)) {
              holders.delete(b);
              pool.release(b, { status: 'I', busy: false, dirty: false });
            }
            await tick();
          }
          expect(held).toEqual([]);
          expect(waiting).toEqual([]);
          const s = pool.stats();
          expect(s.active + s.waiting + s.resetting).toBe(0);
          expect(lost).toBeGreaterThanOrEqual(0);
        } finally {
          pool.destroyAll();
        }
      }),
      { numRuns: 150 },
    );
  });
});
