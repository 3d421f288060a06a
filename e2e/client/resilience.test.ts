// Connection loss, endpoint failover, the peer's stream grant, idle connections and 0-RTT
// resumption, against real poolers and a real Postgres.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QuicTicketStore } from '@quicpool/transport';
import { QuicPool, SessionManager } from '@quicpool/client';
import { discardStream } from './helpers.js';
import { quicOptions, rejection, startQuicPooler, trustLogin, until } from './helpers.js';
import type { TestPooler } from './helpers.js';

let a: TestPooler;
let b: TestPooler;
beforeAll(async () => {
  [a, b] = await Promise.all([startQuicPooler({ poolSize: 20 }), startQuicPooler({ poolSize: 20 })]);
});
afterAll(async () => {
  await a.close();
  await b.close();
});

const ids = (n: number, from = 0): number[] => Array.from({ length: n }, (_, i) => from + i);

describe('session manager resilience', () => {
  it('loses one QUIC connection mid-load: its queries fail clearly, the rest succeed, it is replaced', async () => {
    const pool = new QuicPool({ ...trustLogin, max: 40, quic: await quicOptions([a.endpoint], { maxConnections: 4, streamsPerConnection: 10 }) });
    const poolErrors: Error[] = [];
    pool.on('error', (e) => poolErrors.push(e)); // idle clients on the lost connection (pg.Pool semantics)
    try {
      await Promise.all(ids(40).map((i) => pool.query('select $1::int', [i]))); // 40 sessions on 4 connections
      expect(pool.sessions!.stats().connections).toBe(4);
      const load = ids(40).map((i) => pool.query('select pg_sleep(0.4), $1::int as i', [i]).then(
        (r) => ({ ok: true as const, i: r.rows[0].i as number }),
        (e: Error & { code?: string }) => ({ ok: false as const, e }),
      ));
      // All 40 queries have reached the pooler (20 run, 20 wait for a server) before one
      // connection is killed; the first of them end after 0.4 s.
      await until(() => a.pooler.stats().pools.reduce((n, p) => n + p.active + p.waiting, 0) === 40);
      const victim = pool.sessions!.connections()[0]!;
      const onVictim = victim.streams.size;
      expect(onVictim).toBe(10);
      await victim.close({ graceful: false, reason: 'test: QUIC connection killed' });
      const results = await Promise.all(load);
      const failed = results.filter((r) => !r.ok);
      expect(failed).toHaveLength(onVictim);
      for (const f of failed) {
        if (f.ok) continue;
        expect(f.e.message).toMatch(/QUIC connection killed/);
        expect(f.e.code).toBe('ECONNABORTED');
      }
      expect(results.filter((r) => r.ok)).toHaveLength(40 - onVictim);
      // New queries succeed; the manager replaced the connection.
      const again = await Promise.all(ids(40).map((i) => pool.query('select $1::int as i', [i])));
      again.forEach((r, i) => expect(r.rows[0].i).toBe(i));
      const s = pool.sessions!.stats();
      expect(s.connectionsLost).toBe(1);
      expect(s.connections).toBe(4);
      expect(s.handshakes).toBe(5);
    } finally {
      await pool.end();
    }
  }, 20_000);

  it('spreads connections over two poolers and fails over when one goes down', async () => {
    const c = await startQuicPooler();
    const events: string[] = [];
    // A short QUIC idle timeout bounds how long a silently dead pooler goes unnoticed (the
    // pooler's CONNECTION_CLOSE does not always arrive: transport issue, reported).
    const pool = new QuicPool({
      ...trustLogin, max: 40,
      quic: await quicOptions([c.endpoint, b.endpoint], { maxConnections: 4, streamsPerConnection: 10, quic: { idleTimeoutMs: 1_500, keepAliveMs: 300 } }),
    });
    pool.on('error', () => undefined);
    pool.sessions!.on('connectionLost', (e) => events.push(`lost ${e.endpoint}`));
    pool.sessions!.on('endpointDown', (e) => events.push(`down ${e.endpoint}`));
    try {
      await Promise.all(ids(40).map((i) => pool.query('select pg_sleep(0.05), $1::int', [i])));
      expect(pool.sessions!.stats().endpoints.map((e) => e.connections)).toEqual([2, 2]);
      await c.close(); // pooler C goes away: its clients get CONNECTION_CLOSE
      await until(() => pool.sessions!.stats().endpoints[0]!.connections === 0);
      const r = await Promise.all(ids(40).map((i) => pool.query('select pg_sleep(0.05), $1::int as i', [i])));
      r.forEach((x, i) => expect(x.rows[0].i).toBe(i));
      const s = pool.sessions!.stats();
      expect(s.endpoints[1]!.connections).toBe(4);
      expect(s.connectionsLost).toBe(2);
      expect(events).toContain(`lost ${c.endpoint}`);
    } finally {
      await pool.end();
    }
    // A fresh manager whose first endpoint is down goes to the second one.
    const m = new SessionManager(await quicOptions([c.endpoint, b.endpoint], { maxConnections: 2 }));
    try {
      const pool2 = new QuicPool({ ...trustLogin, quic: m });
      expect((await pool2.query('select 1 as x')).rows[0].x).toBe(1);
      await pool2.end();
      const s = m.stats();
      expect(s.connectionFailures).toBe(1);
      expect(s.endpoints[0]!.down).toBe(true);
      expect(s.endpoints[0]!.lastError).toMatch(/no QUIC server answers|refused|timed out/i);
    } finally {
      await m.close();
    }
  }, 20_000);

  it('never asks for more streams than the pooler grants: opens more connections instead', async () => {
    const small = await startQuicPooler({ maxStreamsPerConnection: 5 });
    const pool = new QuicPool({ ...trustLogin, max: 20, quic: await quicOptions([small.endpoint], { maxConnections: 4, streamsPerConnection: 40 }) });
    try {
      const r = await Promise.all(ids(20).map((i) => pool.query('select pg_sleep(0.1), $1::int as i', [i])));
      r.forEach((x, i) => expect(x.rows[0].i).toBe(i));
      const s = pool.sessions!.stats();
      expect(s.connections).toBe(4);
      expect(s.streamsInUse).toBe(20);
      expect(s.acquireFailures + s.connectionFailures).toBe(0);
      for (const conn of pool.sessions!.connections()) expect(conn.streams.size).toBeLessThanOrEqual(5);
    } finally {
      await pool.end();
      await small.close();
    }
  }, 20_000);

  it('closes idle connections down to minConnections, and refuses acquires after a timeout', async () => {
    const m = new SessionManager(await quicOptions([a.endpoint], {
      maxConnections: 3, streamsPerConnection: 2, minConnections: 1, idleTimeoutMs: 150, acquireTimeoutMs: 2_000, // from queueing: covers the three handshakes
    }));
    try {
      const streams = await Promise.all(ids(6).map(() => m.acquire()));
      expect(m.stats().connections).toBe(3);
      const err = await rejection(m.acquire()); // 3 x 2 in use: nothing frees up
      expect(err.message).toMatch(/timed out after 2000 ms waiting/);
      // End them (FIN). Not destroy(): a reset of a stream the server has not read yet currently
      // surfaces in the server as an unhandled 'error' (transport bug, reported).
      for (const s of streams) discardStream(s);
      await until(() => m.stats().connections === 1, 3_000);
      expect(m.stats().idleClosed).toBe(2);
      expect(m.stats().streamsInUse).toBe(0);
    } finally {
      await m.close();
    }
  }, 20_000);

  it('warm() opens minConnections before any session is needed', async () => {
    const m = new SessionManager(await quicOptions([a.endpoint, b.endpoint], { minConnections: 2, maxConnections: 3 }));
    const opened: string[] = [];
    m.on('connectionOpen', (e) => opened.push(e.endpoint));
    try {
      expect(m.stats().connections).toBe(0); // lazy
      await m.warm();
      await until(() => m.stats().connections === 2);
      expect(opened.sort()).toEqual([a.endpoint, b.endpoint].sort()); // spread over both poolers
      expect(m.stats().streamsInUse).toBe(0);
    } finally {
      await m.close();
    }
  }, 20_000);

  it('resumes with 0-RTT from a shared ticket store', async () => {
    const tickets = new QuicTicketStore();
    const first = new QuicPool({ ...trustLogin, quic: await quicOptions([a.endpoint], { tickets }) });
    expect((await first.query('select 1 as x')).rows[0].x).toBe(1);
    await first.end();
    expect(tickets.size).toBe(1);
    const second = new QuicPool({ ...trustLogin, quic: await quicOptions([a.endpoint], { tickets }) });
    try {
      const c = await second.connect();
      const stream = (c as unknown as { sessionStream: { info: { quic: { earlyData: boolean } | null } } }).sessionStream;
      expect(stream.info.quic?.earlyData).toBe(true); // handed out before the handshake completed
      expect((await c.query('select 2 as x')).rows[0].x).toBe(2);
      c.release();
      expect(second.sessions!.stats().resumptions).toBe(1);
    } finally {
      await second.end();
    }
  }, 20_000);
});
