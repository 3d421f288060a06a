// A pool while its server is down (restart, failover): waiters wait instead of failing, one login
// at a time retries after a backoff, a wait ends with the server's own error after outageWaitMs,
// errors that do not pass still fail at once. On the pooler's clock (no test sleeps).
import { describe, expect, it } from 'vitest';
import { resolvePoolSettings } from '../config/pool-settings.js';
import type { BackendConnection } from '../backend/connect.js';
import { BackendLoginError } from '../backend/login.js';
import { HostChoice } from '../upstream/host-choice.js';
import { RETRY_MAX_MS } from '../upstream/outage.js';
import { Pool } from './pool.js';
import type { PoolUpstreamEvent } from './pool.js';
import { fakeConnect, fakeDeps, recordingWaiter, tick } from '../../test/support/fake-backend.js';
import type { FakeSocket } from '../../test/support/fake-backend.js';
import { ManualClock } from '../../test/support/manual-clock.js';

const LOGIN = { database: 'db', user: 'u', password: undefined, connectTimeoutMs: 1000 };
const SERVER = { host: '127.0.0.1', port: 5432 };
const refused = (): BackendLoginError => new BackendLoginError('server login failed: connect ECONNREFUSED 127.0.0.1:5432', undefined, 'ECONNREFUSED');
const startingUp = (): BackendLoginError =>
  new BackendLoginError('server refused login: the database system is starting up', { S: 'FATAL', C: '57P03', M: 'the database system is starting up' });

/** A server that refuses the first `failures` logins (with `error`), then accepts. */
function server(failures: number, error: () => Error = refused): { dials: number; dial(): Promise<BackendConnection> } {
  return {
    dials: 0,
    dial() {
      return ++this.dials <= failures ? Promise.reject(error()) : fakeConnect();
    },
  };
}

function outagePool(s: { dial(): Promise<BackendConnection> }, o: { outageWaitMs?: number; queryWaitTimeoutMs?: number; serverCheckDelayMs?: number } = {}) {
  const clock = new ManualClock();
  const events: PoolUpstreamEvent[] = [];
  const hosts = new HostChoice(() => [SERVER], () => 'any', () => s.dial(), () => undefined);
  const settings = resolvePoolSettings({ poolSize: 2, queryWaitTimeoutMs: o.queryWaitTimeoutMs ?? 120_000, serverCheckDelayMs: o.serverCheckDelayMs ?? 1_000_000 });
  const pool = new Pool('db', 'u', settings, LOGIN, {
    ...fakeDeps(clock, () => hosts.connect()),
    hosts,
    outageWaitMs: () => o.outageWaitMs ?? 60_000,
    upstream: (_p, e) => void events.push(e),
    random: () => 1, // the top of each backoff window
  });
  return { clock, pool, events };
}

/** Moves the clock by `ms` in steps, letting the pool's promises settle between them. */
async function run(clock: ManualClock, ms: number, step = 5): Promise<void> {
  for (let t = 0; t < ms; t += step) {
    clock.advance(step);
    await tick();
  }
}

describe('Pool during a server outage', () => {
  it('keeps a waiter through refused logins, one login at a time with backoff, and serves it when the server is back', async () => {
    const s = server(5);
    const { clock, pool, events } = outagePool(s);
    try {
      const w = recordingWaiter();
      pool.acquire(w);
      await tick();
      expect(w.error).toBeNull();
      expect(pool.stats()).toMatchObject({ serverDown: true, waiting: 1, connecting: 0 });
      // Backoff 10, 20, 40, 80 ms (the top of each window): four more failed logins within 150 ms.
      await run(clock, 149);
      expect(s.dials).toBe(5);
      expect(w.backend).toBeNull();
      await run(clock, 160);
      expect(s.dials).toBe(6);
      expect(w.backend).not.toBeNull();
      expect(pool.stats().serverDown).toBe(false);
      expect(events.map((e) => e.type)).toEqual(['loginFailed', 'serverDown', 'loginFailed', 'loginFailed', 'loginFailed', 'loginFailed', 'serverUp']);
      expect(events.at(-1)).toMatchObject({ type: 'serverUp', server: '127.0.0.1:5432', outageMs: 310 });
    } finally {
      pool.destroyAll();
    }
  });

  it('retries at most every RETRY_MAX_MS however long the outage lasts', async () => {
    const s = server(1000);
    const { clock, pool } = outagePool(s);
    try {
      pool.acquire(recordingWaiter());
      await tick();
      await run(clock, 10 * RETRY_MAX_MS);
      // The first login, then after 10, 20, 40, 80, 160 ms, then one every 250 ms: 14 in 2.5 s, never a burst.
      expect(s.dials).toBeGreaterThanOrEqual(13);
      expect(s.dials).toBeLessThanOrEqual(14);
    } finally {
      pool.destroyAll();
    }
  });

  it('ends a wait after outageWaitMs with the server\'s own error, not query_wait_timeout', async () => {
    const { clock, pool } = outagePool(server(1000, startingUp), { outageWaitMs: 500 });
    try {
      const w = recordingWaiter();
      pool.acquire(w);
      await tick();
      await run(clock, 490);
      expect(w.error).toBeNull();
      await run(clock, 20);
      expect(w.error).toMatchObject({ sqlstate: '57P03', message: 'the database system is starting up' });
      expect(pool.stats().waitTimeoutsTotal).toBe(1);
    } finally {
      pool.destroyAll();
    }
  });

  it('fails at once for an error that does not pass, and when outageWaitMs is 0', async () => {
    const missing = () => new BackendLoginError('server refused login: database "x" does not exist', { S: 'FATAL', C: '3D000', M: 'database "x" does not exist' });
    const a = outagePool(server(1, missing));
    const b = outagePool(server(1), { outageWaitMs: 0 });
    try {
      const wa = recordingWaiter();
      const wb = recordingWaiter();
      a.pool.acquire(wa);
      b.pool.acquire(wb);
      await tick();
      expect(wa.error?.sqlstate).toBe('3D000');
      expect(wb.error?.sqlstate).toBe('08001');
      expect(a.pool.stats().serverDown).toBe(false);
      expect(b.pool.stats().serverDown).toBe(false);
    } finally {
      a.pool.destroyAll();
      b.pool.destroyAll();
    }
  });

  it('checks idle connections from before an outage before it lends them again', async () => {
    const s = server(0);
    const { clock, pool } = outagePool(s);
    try {
      const first = recordingWaiter();
      const second = recordingWaiter();
      pool.acquire(first);
      pool.acquire(second);
      await tick();
      const kept = first.backend!;
      pool.release(kept, { status: 'I', busy: false, dirty: false });
      clock.advance(1);
      // The server closes the other connection (a restart): the one left idle is suspect.
      (second.backend!.stream as unknown as FakeSocket).destroy();
      await tick();
      const next = recordingWaiter();
      pool.acquire(next);
      expect(next.backend).toBeNull(); // the health check runs first
      expect((kept.stream as unknown as FakeSocket).queries).toEqual(['']);
      await tick();
      expect(next.backend).toBe(kept);
    } finally {
      pool.destroyAll();
    }
  });
});
