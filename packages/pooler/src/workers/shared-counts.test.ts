// The daemon-wide counts against a plain model: random takes, gives, admissions and departures of
// three workers over a few pools, some workers forgotten on the way. The limits always hold, the
// totals are the sums of what each worker holds, a key keeps its slot while referenced, and a
// forgotten worker's share is gone.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SharedCounts } from './shared-counts.js';
import type { Slot } from './shared-counts.js';

const WORKERS = 3;
const KEYS = ['db\0a', 'db\0b', 'other\0a'];
const POOL_CAP = 4;
const GLOBAL_CAP = 7;

type Op =
  | { kind: 'take'; w: number; k: number }
  | { kind: 'give'; w: number; k: number }
  | { kind: 'admit'; w: number; k: number }
  | { kind: 'leave'; w: number; k: number }
  | { kind: 'want'; w: number; k: number; on: boolean }
  | { kind: 'forget'; w: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('take' as const), w: fc.nat(WORKERS - 1), k: fc.nat(KEYS.length - 1) }),
  fc.record({ kind: fc.constant('give' as const), w: fc.nat(WORKERS - 1), k: fc.nat(KEYS.length - 1) }),
  fc.record({ kind: fc.constant('admit' as const), w: fc.nat(WORKERS - 1), k: fc.nat(KEYS.length - 1) }),
  fc.record({ kind: fc.constant('leave' as const), w: fc.nat(WORKERS - 1), k: fc.nat(KEYS.length - 1) }),
  fc.record({ kind: fc.constant('want' as const), w: fc.nat(WORKERS - 1), k: fc.nat(KEYS.length - 1), on: fc.boolean() }),
  fc.record({ kind: fc.constant('forget' as const), w: fc.nat(WORKERS - 1) }),
);

describe('SharedCounts', () => {
  it('keeps the limits and the per-worker shares under any sequence of operations', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 300 }), (ops) => {
        const counts = new SharedCounts(SharedCounts.allocate(WORKERS), WORKERS);
        // The model: servers and clients per (worker, key); each worker holds a slot reference
        // while it has anything of the key (as PoolerCore does).
        const servers = new Map<string, number>();
        const clients = new Map<string, number>();
        const wanting = new Set<string>();
        const slots = new Map<string, Slot>();
        const id = (w: number, k: number): string => `${w}/${k}`;
        const get = (m: Map<string, number>, w: number, k: number): number => m.get(id(w, k)) ?? 0;
        const slotOf = (w: number, k: number): Slot => {
          const held = slots.get(id(w, k));
          if (held !== undefined) return held;
          const s = counts.attach(KEYS[k]!, w);
          expect(s).not.toBeNull();
          for (const [key, other] of slots) if (key.endsWith(`/${k}`)) expect(other).toBe(s); // one slot per key
          slots.set(id(w, k), s!);
          return s!;
        };
        const release = (w: number, k: number): void => {
          if (get(servers, w, k) + get(clients, w, k) > 0 || wanting.has(id(w, k))) return;
          const s = slots.get(id(w, k));
          if (s === undefined) return;
          counts.detach(s, w);
          slots.delete(id(w, k));
        };
        const sum = (m: Map<string, number>, k?: number): number => {
          let n = 0;
          for (const [key, v] of m) if (k === undefined || key.endsWith(`/${k}`)) n += v;
          return n;
        };
        for (const o of ops) {
          switch (o.kind) {
            case 'take': {
              const r = counts.takeServer(slotOf(o.w, o.k), o.w, POOL_CAP, GLOBAL_CAP);
              if (r === 'ok') servers.set(id(o.w, o.k), get(servers, o.w, o.k) + 1);
              if (r === 'pool') {
                const yielded = [...Array(WORKERS).keys()].some((u) => u !== o.w && wanting.has(id(u, o.k)) && get(servers, u, o.k) < get(servers, o.w, o.k));
                expect(sum(servers, o.k) >= POOL_CAP || yielded).toBe(true);
              }
              if (r === 'global') expect(sum(servers)).toBe(GLOBAL_CAP);
              release(o.w, o.k);
              break;
            }
            case 'give':
              if (get(servers, o.w, o.k) === 0) break;
              counts.giveServer(slotOf(o.w, o.k), o.w);
              servers.set(id(o.w, o.k), get(servers, o.w, o.k) - 1);
              release(o.w, o.k);
              break;
            case 'admit': {
              const r = counts.admitClient(slotOf(o.w, o.k), o.w, 5, 9);
              if (r === 'ok') clients.set(id(o.w, o.k), get(clients, o.w, o.k) + 1);
              else expect(r === 'pool' ? sum(clients, o.k) >= 5 : sum(clients) >= 9).toBe(true);
              release(o.w, o.k);
              break;
            }
            case 'leave':
              if (get(clients, o.w, o.k) === 0) break;
              counts.leaveClient(slotOf(o.w, o.k), o.w);
              clients.set(id(o.w, o.k), get(clients, o.w, o.k) - 1);
              release(o.w, o.k);
              break;
            case 'want':
              counts.setWanting(slotOf(o.w, o.k), o.w, o.on);
              if (o.on) wanting.add(id(o.w, o.k));
              else wanting.delete(id(o.w, o.k));
              release(o.w, o.k);
              break;
            case 'forget':
              counts.forgetWorker(o.w);
              for (let k = 0; k < KEYS.length; k++) {
                servers.delete(id(o.w, k));
                clients.delete(id(o.w, k));
                wanting.delete(id(o.w, k));
                slots.delete(id(o.w, k));
              }
              break;
            default: {
              const never: never = o;
              throw new Error(String(never));
            }
          }
          expect(counts.totalServers).toBe(sum(servers));
          expect(counts.totalClients).toBe(sum(clients));
          expect(counts.totalServers).toBeLessThanOrEqual(GLOBAL_CAP);
          for (const [key, s] of slots) {
            const k = Number(key.split('/')[1]);
            expect(counts.servers(s)).toBe(sum(servers, k));
            expect(counts.servers(s)).toBeLessThanOrEqual(POOL_CAP);
            for (let w = 0; w < WORKERS; w++) expect(counts.held(s, w)).toBe(get(servers, w, k));
          }
        }
      }),
      { numRuns: 200 },
    );
  });

  it('reserveClose keeps min_size when workers close idle connections at the same time', () => {
    const counts = new SharedCounts(SharedCounts.allocate(2), 2);
    const s = counts.attach('db\0u', 0)!;
    expect(counts.attach('db\0u', 1)).toBe(s);
    for (const w of [0, 0, 1]) expect(counts.takeServer(s, w, 10, 0)).toBe('ok');
    // Three open, min_size 1: two closes are allowed in all, whoever asks.
    expect([counts.reserveClose(s, 1), counts.reserveClose(s, 1), counts.reserveClose(s, 1)]).toEqual([true, true, false]);
    expect(counts.servers(s)).toBe(1);
    counts.giveServer(s, 0);
    counts.closeDone(s);
    expect(counts.servers(s)).toBe(1);
  });

  it('a full table refuses a new key and takes it once a slot is free', () => {
    const counts = new SharedCounts(new SharedArrayBuffer((4 + 2 * (6 + 4)) * 4), 1);
    expect(counts.slots).toBe(2);
    const a = counts.attach('a', 0)!;
    expect(counts.attach('b', 0)).not.toBeNull();
    expect(counts.attach('c', 0)).toBeNull();
    counts.detach(a, 0);
    expect(counts.attach('c', 0)).not.toBeNull();
    expect(counts.attach('b', 0)).not.toBeNull(); // still there, past the reused slot
  });
});
