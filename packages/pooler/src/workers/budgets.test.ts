// Two workers' pools of one (database, user) on one budget, with instant fake servers and a
// manual clock: the budget never goes past pool.size, a worker with no connection gets one as a
// transaction of the other ends, connections idle long enough (and only those) go to a worker
// that waits, and the share evens out without connections moving back and forth.
import { describe, expect, it } from 'vitest';
import { resolvePoolSettings } from '../config/pool-settings.js';
import type { Backend } from '../backend/backend.js';
import { IDLE_BEFORE_GIVING_MS, Pool } from '../pool/pool.js';
import type { Waiter } from '../pool/pool.js';
import { fakeDeps, tick } from '../../test/support/fake-backend.js';
import { ManualClock } from '../../test/support/manual-clock.js';
import { Budgets, WANT_REPEAT_MS } from './budgets.js';
import type { PeerMessage, Peers } from './peers.js';
import { SharedCounts } from './shared-counts.js';

const LOGIN = { server: { host: '', port: 1 }, database: 'db', user: 'u', password: undefined, connectTimeoutMs: 1000 };
const KEY = 'db\0u';

/** Two workers whose peer messages reach each other at once (as a BroadcastChannel would, later). */
function twoWorkers(poolSize: number, clock: ManualClock): { pools: [Pool, Pool]; counts: SharedCounts; posted: PeerMessage[] } {
  const counts = new SharedCounts(SharedCounts.allocate(2), 2);
  const budgets: Budgets[] = [];
  const posted: PeerMessage[] = [];
  const peersOf = (w: number): Peers => ({
    post: (m: PeerMessage) => {
      posted.push(m);
      queueMicrotask(() => budgets[1 - w]?.receive(m));
    },
    close: () => undefined,
  });
  for (const w of [0, 1]) budgets.push(new Budgets(counts, w, peersOf(w), () => 0, clock));
  const pools = [0, 1].map((w) => {
    const slot = counts.attach(KEY, w)!;
    return new Pool('db', 'u', resolvePoolSettings({ poolSize, serverCheckDelayMs: 1_000_000 }), LOGIN, {
      ...fakeDeps(clock),
      budget: (p) => budgets[w]!.forPool(KEY, slot, p),
    });
  }) as [Pool, Pool];
  return { pools, counts, posted };
}

/** A client of a pool: the connection it holds, and the errors it got (none expected). */
function waiter(): Waiter & { backend: Backend | null; errors: unknown[] } {
  return {
    backend: null,
    errors: [],
    onBackend(b) {
      this.backend = b;
    },
    onError(e) {
      this.errors.push(e);
    },
    onBackendMessage: () => undefined,
    onBackendLost: () => undefined,
  };
}

const settle = async (): Promise<void> => {
  for (let i = 0; i < 10; i++) await tick();
};
const CLEAN = { status: 'I' as const, busy: false, dirty: false };

/** Every client that holds a connection finishes a transaction and queues again at once (a closed loop). */
async function closedLoop(workers: readonly (readonly [Pool, readonly ReturnType<typeof waiter>[]])[]): Promise<void> {
  for (const [pool, clients] of workers) {
    for (const w of clients) {
      if (w.backend === null) continue;
      const x = w.backend;
      w.backend = null;
      pool.release(x, CLEAN);
      pool.acquire(w);
    }
  }
  await settle();
}

describe('the server budget of two workers', () => {
  it('a worker with none gets one when the other releases: never more than pool.size in all', async () => {
    const clock = new ManualClock();
    const { pools: [a, b], counts } = twoWorkers(2, clock);
    try {
      const held = [waiter(), waiter()];
      for (const w of held) a.acquire(w);
      await settle();
      expect(held.every((w) => w.backend !== null)).toBe(true);
      const onB = waiter();
      b.acquire(onB);
      await settle();
      expect(onB.backend).toBeNull(); // both units are worker a's
      expect(counts.totalServers).toBe(2);
      // a's transaction ends: a holds 2, b none and waits: the connection goes to b.
      a.release(held[0]!.backend!, CLEAN);
      await settle();
      expect(onB.backend).not.toBeNull();
      expect(counts.totalServers).toBe(2);
      expect([a.stats().idle + a.stats().active, b.stats().active]).toEqual([1, 1]);
    } finally {
      a.destroyAll();
      b.destroyAll();
    }
  });

  it('an idle connection goes to a waiting worker only once it has been idle IDLE_BEFORE_GIVING_MS', async () => {
    const clock = new ManualClock();
    const { pools: [a, b] } = twoWorkers(1, clock);
    try {
      const first = waiter();
      a.acquire(first);
      await settle();
      a.release(first.backend!, CLEAN); // idle in worker a, just used
      const onB = waiter();
      b.acquire(onB);
      await settle();
      clock.advance(IDLE_BEFORE_GIVING_MS - 1);
      await settle();
      expect(onB.backend).toBeNull(); // between two transactions of a's clients, perhaps: kept
      clock.advance(1);
      await settle();
      expect(onB.backend).not.toBeNull();
      expect(a.stats()).toMatchObject({ idle: 0, active: 0 });
    } finally {
      a.destroyAll();
      b.destroyAll();
    }
  });

  it('shares out evenly and then stops moving connections', async () => {
    const clock = new ManualClock();
    const { pools: [a, b], counts } = twoWorkers(4, clock);
    try {
      // Four busy clients on a, four waiting on b: a gives as transactions end, until 2 and 2.
      const onA = Array.from({ length: 4 }, waiter);
      for (const w of onA) a.acquire(w);
      await settle();
      const onB = Array.from({ length: 4 }, waiter);
      for (const w of onB) b.acquire(w);
      await settle();
      const connects = (): number => a.stats().connectsTotal + b.stats().connectsTotal;
      for (let round = 0; round < 6; round++) await closedLoop([[a, onA], [b, onB]]);
      expect([counts.held(counts.attach(KEY, 0)!, 0), counts.held(counts.attach(KEY, 1)!, 1)]).toEqual([2, 2]);
      const settled = connects();
      for (let round = 0; round < 6; round++) await closedLoop([[a, onA], [b, onB]]);
      expect(connects()).toBe(settled); // no more server logins once even
      expect(counts.totalServers).toBe(4);
      expect([...onA, ...onB].flatMap((w) => w.errors)).toEqual([]);
    } finally {
      a.destroyAll();
      b.destroyAll();
    }
  });

  it('a connection released into idle while another worker waits goes to it once idle long enough', async () => {
    const clock = new ManualClock();
    const { pools: [a, b] } = twoWorkers(2, clock);
    try {
      const pinned = waiter(); // a's session that keeps its connection (e.g. it holds a lock)
      a.acquire(pinned);
      const onB = waiter();
      b.acquire(onB);
      await settle();
      expect([pinned.backend, onB.backend].every((x) => x !== null)).toBe(true);
      const second = waiter();
      a.acquire(second); // refused by the budget: a asks while b's connection is busy
      await settle();
      b.release(onB.backend!, CLEAN); // idle now, and b's clients are quiet
      await settle();
      expect(second.backend).toBeNull();
      clock.advance(IDLE_BEFORE_GIVING_MS);
      await settle();
      expect(second.backend).not.toBeNull();
      expect(b.stats()).toMatchObject({ idle: 0, active: 0 });
    } finally {
      a.destroyAll();
      b.destroyAll();
    }
  });

  it('a saturated worker whose queue empties and fills between transactions asks at most once per WANT_REPEAT_MS', async () => {
    const clock = new ManualClock();
    const { pools: [a, b], posted } = twoWorkers(2, clock);
    try {
      const onA = waiter();
      a.acquire(onA);
      const onB = [waiter(), waiter()];
      for (const w of onB) b.acquire(w);
      await settle();
      // a holds one, b one with a second client queued: b wants. 100 transactions in 10 ms.
      const bHolder = (): (typeof onB)[number] => onB.find((w) => w.backend !== null)!;
      for (let i = 0; i < 100; i++) {
        const w = bHolder();
        const x = w.backend!;
        w.backend = null;
        b.release(x, CLEAN); // the queued client gets it: b's queue is empty (b is satisfied)...
        b.acquire(w); // ...and full again: b wants again
        clock.advance(0.1);
        await tick();
      }
      await settle();
      expect(posted.filter((m) => m.type === 'want').length).toBe(1);
      clock.advance(WANT_REPEAT_MS); // still wanting at the end of the window: asked again
      await settle();
      expect(posted.filter((m) => m.type === 'want').length).toBe(2);
    } finally {
      a.destroyAll();
      b.destroyAll();
    }
  });
});
