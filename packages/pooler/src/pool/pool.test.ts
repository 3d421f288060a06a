import { describe, expect, it } from 'vitest';
import { resolvePoolSettings } from '../config/pool-settings.js';
import type { PoolSettings } from '../config/pool-settings.js';
import type { Backend } from '../backend/backend.js';
import { BackendLoginError } from '../backend/connect.js';
import { Pool } from './pool.js';
import { fakeDeps, recordingWaiter, FakeSocket, tick } from '../../test/support/fake-backend.js';
import { ManualClock } from '../../test/support/manual-clock.js';

const LOGIN = { database: 'db', user: 'u', password: undefined, connectTimeoutMs: 1000 };

function pool(settings: Partial<PoolSettings>, clock = new ManualClock()): Pool {
  return new Pool('db', 'u', resolvePoolSettings({ serverCheckDelayMs: 1_000_000, ...settings }), LOGIN, fakeDeps(clock));
}

const socketOf = (b: Backend) => b.stream as unknown as FakeSocket;

describe('Pool', () => {
  it('reuses a clean backend, rolls back and resets a dirty one before reuse', async () => {
    const p = pool({ poolSize: 1 });
    try {
      const a = recordingWaiter();
      p.acquire(a);
      await tick();
      const b = a.backend!;
      p.release(b, { status: 'I', busy: false, dirty: false });
      expect(socketOf(b).queries).toEqual([]);
      const c = recordingWaiter();
      p.acquire(c);
      expect(c.backend).toBe(b);
      p.release(b, { status: 'T', busy: false, dirty: true });
      expect(socketOf(b).queries).toEqual(['ROLLBACK', 'DISCARD ALL']);
      expect(p.stats().resetting).toBe(1);
      await tick();
      expect(p.stats()).toMatchObject({ idle: 1, resetting: 0 });
    } finally {
      p.destroyAll();
    }
  });

  it('session mode always resets; a busy backend is closed, not reused', async () => {
    const p = pool({ poolSize: 2, poolMode: 'session' });
    try {
      const a = recordingWaiter();
      p.acquire(a);
      await tick();
      p.release(a.backend!, { status: 'I', busy: false, dirty: false });
      expect(socketOf(a.backend!).queries).toEqual(['DISCARD ALL']);
      await tick();
      const c = recordingWaiter();
      p.acquire(c);
      p.release(c.backend!, { status: 'I', busy: true, dirty: false });
      expect(p.stats()).toMatchObject({ idle: 0, active: 0, closedTotal: 1 });
    } finally {
      p.destroyAll();
    }
  });

  it('closes backends past their lifetime on release and idle ones past the idle timeout, down to minPoolSize', async () => {
    const clock = new ManualClock();
    const p = pool({ poolSize: 3, minPoolSize: 1, serverLifetimeMs: 1000, serverIdleTimeoutMs: 100 }, clock);
    try {
      await tick();
      expect(p.stats().idle).toBe(1); // pre-warmed
      const ws = [recordingWaiter(), recordingWaiter(), recordingWaiter()];
      for (const w of ws) p.acquire(w);
      await tick();
      clock.advance(50);
      p.release(ws[0]!.backend!, { status: 'I', busy: false, dirty: false });
      p.release(ws[1]!.backend!, { status: 'I', busy: false, dirty: false });
      clock.advance(450); // the maintenance tick (every second) has not come yet
      p.maintain();
      // Both idle ones closed by the idle timeout: the active one still counts for minPoolSize.
      expect(p.stats()).toMatchObject({ idle: 0, active: 1, closedTotal: 2 });
      clock.advance(1500 - 1); // the tick at 1 s: the active backend alone satisfies minPoolSize
      await tick();
      expect(p.stats()).toMatchObject({ idle: 0, active: 1, closedTotal: 2 });
      clock.advance(1);
      p.release(ws[2]!.backend!, { status: 'I', busy: false, dirty: false }); // opened at 0: past its lifetime
      expect(p.stats()).toMatchObject({ idle: 0, active: 0, closedTotal: 3 });
      clock.advance(1000); // the next tick restores minPoolSize
      await tick();
      expect(p.stats()).toMatchObject({ idle: 1, closedTotal: 3 });
      clock.advance(1000); // that one reaches its lifetime idle: the tick replaces it
      await tick();
      expect(p.stats()).toMatchObject({ idle: 1, closedTotal: 4 });
    } finally {
      p.destroyAll();
    }
  });

  it('a waiter that cannot get a backend in time gets 57014, exactly at its deadline', async () => {
    const clock = new ManualClock();
    const p = pool({ poolSize: 1, queryWaitTimeoutMs: 20 }, clock);
    try {
      const a = recordingWaiter();
      p.acquire(a);
      await tick();
      const b = recordingWaiter();
      p.acquire(b);
      clock.advance(19);
      expect(b.error).toBeNull();
      expect(p.stats()).toMatchObject({ waiting: 1, maxWaitMs: 19 });
      clock.advance(1);
      expect(b.backend).toBeNull();
      expect(b.error?.sqlstate).toBe('57014');
      expect(p.stats()).toMatchObject({ waitTimeoutsTotal: 1, waiting: 0, maxWaitMs: 0 });
    } finally {
      p.destroyAll();
    }
  });

  it('measures waits and transactions with its clock', async () => {
    const clock = new ManualClock();
    const p = pool({ poolSize: 1 }, clock);
    try {
      const a = recordingWaiter();
      p.acquire(a);
      await tick(); // the first backend's login
      const b = recordingWaiter();
      p.acquire(b); // waits behind a
      clock.advance(30);
      p.release(a.backend!, { status: 'I', busy: false, dirty: false }); // a held it 30 ms; b gets it
      expect(b.backend).not.toBeNull();
      clock.advance(5);
      p.release(b.backend!, { status: 'I', busy: false, dirty: false });
      expect(p.stats()).toMatchObject({ xactCountTotal: 2, xactTimeMsTotal: 35, waitTimeMsTotal: 30 });
    } finally {
      p.destroyAll();
    }
  });

  it('PAUSE holds new requests (counted as waiting, the wait timeout still runs); RESUME serves them in order', async () => {
    const clock = new ManualClock();
    const p = pool({ poolSize: 2, queryWaitTimeoutMs: 1000 }, clock);
    try {
      const a = recordingWaiter();
      p.acquire(a);
      await tick();
      p.release(a.backend!, { status: 'I', busy: false, dirty: false }); // one idle backend
      p.pause();
      const b = recordingWaiter();
      const c = recordingWaiter();
      p.acquire(b);
      p.acquire(c);
      await tick();
      expect(b.backend).toBeNull();
      expect(p.stats()).toMatchObject({ paused: true, waiting: 2, idle: 1, connecting: 0 });
      clock.advance(100);
      p.resume();
      expect(b.backend).not.toBeNull(); // the idle one, at once
      await tick(); // a second backend for c
      expect(c.backend).not.toBeNull();
      expect(p.stats()).toMatchObject({ paused: false, waiting: 0, active: 2 });
      p.pause();
      const d = recordingWaiter();
      p.acquire(d);
      clock.advance(1000);
      expect(d.error?.sqlstate).toBe('57014'); // paused waits time out like any other
    } finally {
      p.destroyAll();
    }
  });

  it('a server login failure reaches the waiters with the server SQLSTATE', async () => {
    const p = new Pool('db', 'u', resolvePoolSettings({}), LOGIN, fakeDeps(new ManualClock(), () => Promise.reject(new BackendLoginError('no', { S: 'FATAL', C: '3D000', M: 'database "db" does not exist' }))));
    try {
      const a = recordingWaiter();
      p.acquire(a);
      await tick();
      expect(a.error?.sqlstate).toBe('3D000');
      await expect(p.parameters()).rejects.toBeInstanceOf(BackendLoginError);
    } finally {
      p.destroyAll();
    }
  });
});
