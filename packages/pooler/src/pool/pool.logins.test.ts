// How many server logins a pool has under way at once (max_logins_in_progress): a burst of
// waiting clients opens connections one after another (PgBouncer's way), each ended login starts
// the next one that is still needed, and min_size fills the same way.
import { describe, expect, it } from 'vitest';
import { resolvePoolSettings } from '../config/pool-settings.js';
import type { PoolSettings } from '../config/pool-settings.js';
import type { BackendConnection } from '../backend/connect.js';
import { Pool } from './pool.js';
import { fakeConnect, fakeDeps, recordingWaiter, tick } from '../../test/support/fake-backend.js';
import { ManualClock } from '../../test/support/manual-clock.js';

const LOGIN = { database: 'db', user: 'u', password: undefined, connectTimeoutMs: 1000 };

/** A pool whose logins end only when the test says so. */
function gatedPool(settings: Partial<PoolSettings>): { pool: Pool; logins: (() => void)[] } {
  const logins: (() => void)[] = [];
  const connect = (): Promise<BackendConnection> => new Promise((resolve) => logins.push(() => void fakeConnect().then(resolve)));
  const pool = new Pool('db', 'u', resolvePoolSettings({ serverCheckDelayMs: 1_000_000, ...settings }), LOGIN, fakeDeps(new ManualClock(), connect));
  return { pool, logins };
}

describe('server logins under way at once', () => {
  it('one at a time by default: each ended login starts the next one the waiting clients need', async () => {
    const { pool, logins } = gatedPool({ poolSize: 5 });
    try {
      const waiters = [recordingWaiter(), recordingWaiter(), recordingWaiter()];
      for (const w of waiters) pool.acquire(w);
      expect(logins).toHaveLength(1);
      expect(pool.stats()).toMatchObject({ connecting: 1, waiting: 3 });
      logins[0]!();
      await tick();
      expect(waiters.filter((w) => w.backend !== null)).toHaveLength(1);
      expect(logins).toHaveLength(2);
      logins[1]!();
      await tick();
      logins[2]!();
      await tick();
      expect(waiters.every((w) => w.backend !== null)).toBe(true);
      expect(logins).toHaveLength(3);
      expect(pool.stats()).toMatchObject({ connecting: 0, waiting: 0, active: 3 });
    } finally {
      pool.destroyAll();
    }
  });

  it('a connection given back serves a waiter before a login ends, and no login starts that nobody needs', async () => {
    const { pool, logins } = gatedPool({ poolSize: 5 });
    try {
      const a = recordingWaiter();
      pool.acquire(a);
      logins[0]!();
      await tick();
      const b = recordingWaiter();
      const c = recordingWaiter();
      pool.acquire(b);
      pool.acquire(c);
      expect(logins).toHaveLength(2);
      pool.release(a.backend!, { status: 'I', busy: false, dirty: false });
      expect(b.backend).toBe(a.backend);
      logins[1]!();
      await tick();
      expect(c.backend).not.toBeNull();
      expect(logins).toHaveLength(2);
    } finally {
      pool.destroyAll();
    }
  });

  it('max_logins_in_progress allows more at once; min_size fills the same way', async () => {
    const { pool, logins } = gatedPool({ poolSize: 5, maxLoginsInProgress: 2, minPoolSize: 4 });
    try {
      // min_size: the pool opens 2 at once when it is made, and the rest as those end.
      expect(logins).toHaveLength(2);
      logins[0]!();
      logins[1]!();
      await tick();
      expect(logins).toHaveLength(4);
      // Two logins ending in the same turn open nothing more: min_size is reached.
      logins[2]!();
      logins[3]!();
      await tick();
      expect(logins).toHaveLength(4);
      expect(pool.stats()).toMatchObject({ idle: 4, connecting: 0 });
    } finally {
      pool.destroyAll();
    }
  });

  it('refuses a value below 1', () => {
    expect(() => resolvePoolSettings({ maxLoginsInProgress: 0 })).toThrow(/maxLoginsInProgress: must be a whole number >= 1/);
  });
});
