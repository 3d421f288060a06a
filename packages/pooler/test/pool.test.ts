import { describe, expect, it } from 'vitest';
import { resolvePoolSettings } from '../src/config/pool-settings.js';
import type { PoolSettings } from '../src/config/pool-settings.js';
import type { Backend } from '../src/backend/backend.js';
import { BackendLoginError } from '../src/backend/connect.js';
import { Pool } from '../src/pool/pool.js';
import type { Waiter } from '../src/pool/pool.js';
import { fakeConnect, FakeSocket, tick } from './fake-backend.js';

const LOGIN = { host: '', port: 1, database: 'db', user: 'u', password: undefined, connectTimeoutMs: 1000 };

function pool(settings: Partial<PoolSettings>, clock = { now: 0 }): Pool {
  return new Pool('db', 'u', resolvePoolSettings({ serverCheckDelayMs: 1_000_000, ...settings }), LOGIN, { now: () => clock.now, connect: fakeConnect });
}

function waiter(): Waiter & { backend: Backend | null; error: Buffer | null } {
  return {
    backend: null,
    error: null,
    onBackend(b) {
      this.backend = b;
    },
    onError(e) {
      this.error = e;
    },
  };
}

const socketOf = (b: Backend) => b.socket as unknown as FakeSocket;

describe('Pool', () => {
  it('reuses a clean backend, rolls back and resets a dirty one before reuse', async () => {
    const p = pool({ poolSize: 1 });
    try {
      const a = waiter();
      p.acquire(a);
      await tick();
      const b = a.backend!;
      p.release(b, { status: 'I', busy: false, dirty: false });
      expect(socketOf(b).queries).toEqual([]);
      const c = waiter();
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
      const a = waiter();
      p.acquire(a);
      await tick();
      p.release(a.backend!, { status: 'I', busy: false, dirty: false });
      expect(socketOf(a.backend!).queries).toEqual(['DISCARD ALL']);
      await tick();
      const c = waiter();
      p.acquire(c);
      p.release(c.backend!, { status: 'I', busy: true, dirty: false });
      expect(p.stats()).toMatchObject({ idle: 0, active: 0, closedTotal: 1 });
    } finally {
      p.destroyAll();
    }
  });

  it('closes backends past their lifetime on release and idle ones past the idle timeout, down to minPoolSize', async () => {
    const clock = { now: 0 };
    const p = pool({ poolSize: 3, minPoolSize: 1, serverLifetimeMs: 1000, serverIdleTimeoutMs: 100 }, clock);
    try {
      await tick();
      expect(p.stats().idle).toBe(1); // pre-warmed
      const ws = [waiter(), waiter(), waiter()];
      for (const w of ws) p.acquire(w);
      await tick();
      clock.now = 50;
      p.release(ws[0]!.backend!, { status: 'I', busy: false, dirty: false });
      p.release(ws[1]!.backend!, { status: 'I', busy: false, dirty: false });
      clock.now = 500;
      p.maintain();
      // Both idle ones closed by the idle timeout: the active one still counts for minPoolSize.
      expect(p.stats()).toMatchObject({ idle: 0, active: 1, closedTotal: 2 });
      clock.now = 2000;
      p.release(ws[2]!.backend!, { status: 'I', busy: false, dirty: false }); // past its lifetime
      expect(p.stats()).toMatchObject({ idle: 0, active: 0, closedTotal: 3 });
      p.maintain(); // back up to minPoolSize
      await tick();
      expect(p.stats().idle).toBe(1);
    } finally {
      p.destroyAll();
    }
  });

  it('a waiter that cannot get a backend in time gets 57014', async () => {
    const p = pool({ poolSize: 1, queryWaitTimeoutMs: 20 });
    try {
      const a = waiter();
      p.acquire(a);
      await tick();
      const b = waiter();
      p.acquire(b);
      await new Promise((r) => setTimeout(r, 50));
      expect(b.backend).toBeNull();
      expect(b.error?.toString('latin1')).toContain('C57014');
      expect(p.stats().waitTimeoutsTotal).toBe(1);
    } finally {
      p.destroyAll();
    }
  });

  it('a server login failure reaches the waiters with the server SQLSTATE', async () => {
    const p = new Pool('db', 'u', resolvePoolSettings({}), LOGIN, {
      now: () => 0,
      connect: () => Promise.reject(new BackendLoginError('no', { S: 'FATAL', C: '3D000', M: 'database "db" does not exist' })),
    });
    try {
      const a = waiter();
      p.acquire(a);
      await tick();
      expect(a.error?.toString('latin1')).toContain('C3D000');
      await expect(p.parameters()).rejects.toBeInstanceOf(BackendLoginError);
    } finally {
      p.destroyAll();
    }
  });
});
