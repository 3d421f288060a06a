// Fault, seen from the client library: the pooler behind a QuicPool's one QUIC connection, carrying
// 40 busy sessions, goes silent (a relay drops everything: no close, no reset). The QUIC idle
// timeout ends the connection on both sides: every in-flight query rejects (none hangs), the
// pooler releases every backend, and once the path is back the SessionManager opens a new
// connection and the same pool serves queries again.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QuicListener } from '@quicpool/transport';
import { createPooler } from '@quicpool/pooler';
import type { Pooler } from '@quicpool/pooler';
import { QuicPool } from '@quicpool/client';
import { devCerts, pgInfo, quicOptions, until } from './helpers.js';
import { createFaultRole, dropFaultRole, expectNoLeak } from './fault-helpers.js';
import type { FaultRole } from './fault-helpers.js';
import { startUdpFaultRelay } from '@quicpool/pg-fixture';

const POOL_SIZE = 10;
const IDLE_MS = 1_500;
let role: FaultRole;
let pooler: Pooler;
let listener: QuicListener;

beforeAll(async () => {
  role = await createFaultRole('fault_vanish');
  const certs = await devCerts();
  pooler = createPooler({
    server: { host: pgInfo.host, port: pgInfo.port },
    users: { [role.user]: { password: role.password } },
    pool: { poolSize: POOL_SIZE, queryWaitTimeoutMs: 20_000 },
  });
  listener = await QuicListener.listen({ cert: certs.certPem, key: certs.keyPem, host: '127.0.0.1', port: 0, idleTimeoutMs: IDLE_MS });
  pooler.listen(listener);
});
afterAll(async () => {
  await pooler.close({ graceful: false });
  await dropFaultRole(role);
});

describe('the pooler vanishes under a QuicPool with 40 busy sessions', () => {
  it('every query rejects within the idle timeout, nothing leaks, and the pool reconnects when the path is back', async () => {
    const relay = await startUdpFaultRelay({ host: '127.0.0.1', port: listener.address().port });
    const pool = new QuicPool({
      user: role.user, password: role.password, database: role.database, max: 40,
      quic: await quicOptions([`127.0.0.1:${relay.port}`], {
        maxConnections: 1, streamsPerConnection: 40, endpointRetryMs: 100, quic: { idleTimeoutMs: IDLE_MS, keepAliveMs: 300 },
      }),
    });
    pool.on('error', () => undefined);
    try {
      // 40 sessions, each busy in a query that outlasts the fault.
      const ids = Array.from({ length: 40 }, (_, i) => i);
      await Promise.all(ids.map((i) => pool.query('select $1::int as i', [i])));
      expect(pool.sessions!.stats().streamsInUse).toBe(40);
      const inFlight = ids.map((i) => pool.query('select pg_sleep(0.3), $1::int as i', [i]).then(
        (r: pg.QueryResult) => ({ ok: true as const, i, got: r.rows[0].i as number }),
        (e: Error) => ({ ok: false as const, e }),
      ));
      await until(() => pooler.stats().pools.some((p) => p.active + p.waiting > 0));
      relay.blackhole = true;
      const results = await Promise.all(inFlight);
      // The first POOL_SIZE may have had their answers out before the silence; the rest cannot.
      const failed = results.filter((r) => !r.ok);
      expect(failed.length).toBeGreaterThanOrEqual(40 - POOL_SIZE);
      for (const r of results) if (r.ok) expect(r.got).toBe(r.i); // an answer that arrived is its own
      // Within the idle timeout: each one failed on the QUIC idle timer of the silent connection
      // (ETIMEDOUT, "idle timeout"), not on anything that comes later (the pooler's query wait
      // timeout of 20 s, a reconnect).
      for (const r of failed) {
        if (!r.ok) expect(r.e).toMatchObject({ code: 'ETIMEDOUT', message: expect.stringMatching(/idle timeout/) });
      }
      await until(() => pool.sessions!.stats().connectionsLost === 1, 5_000);
      // The pooler ended all 40 sessions at its own idle timeout and got every backend back clean.
      await expectNoLeak(pooler, role.user, POOL_SIZE, IDLE_MS + 5_000);

      // The path comes back: the same pool opens a new connection and serves every worker.
      relay.blackhole = false;
      const again = await Promise.all(ids.map((i) => pool.query('select $1::int as i', [i])));
      again.forEach((r, i) => expect(r.rows[0].i).toBe(i));
      expect(pool.sessions!.stats().handshakes).toBe(2);
    } finally {
      await pool.end();
      await relay.close();
    }
    await expectNoLeak(pooler, role.user, POOL_SIZE);
  }, 30_000);
});
