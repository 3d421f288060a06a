// The pg.Pool API through QuicPool against a real pooler and a real Postgres.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pgStream, QuicClient, QuicPool, SessionManager } from '@quicpool/client';
import { pgInfo, quicOptions, rejection, scramLogin, startQuicPooler, trustLogin, until } from './helpers.js';
import type { TestPooler } from './helpers.js';

let p: TestPooler;
const table = `qp_client_tx_${process.pid}`;

beforeAll(async () => {
  p = await startQuicPooler({ poolSize: 20 });
  const admin = new pg.Client({ host: pgInfo.host, port: pgInfo.port, ...scramLogin });
  await admin.connect();
  await admin.query(`drop table if exists ${table}; create table ${table} (id int primary key, v text); grant all on ${table} to public`);
  await admin.end();
});
afterAll(async () => {
  await p.close();
  const admin = new pg.Client({ host: pgInfo.host, port: pgInfo.port, ...scramLogin });
  await admin.connect();
  await admin.query(`drop table if exists ${table}`);
  await admin.end();
}, 60_000);

describe('QuicPool (pg.Pool over QUIC session streams)', () => {
  it('serves 2,000 concurrent logical clients over 50 connections x 40 streams', async () => {
    const pool = new QuicPool({
      ...trustLogin, max: 2000,
      quic: await quicOptions([p.endpoint], { maxConnections: 50, streamsPerConnection: 40 }),
    });
    const connects: number[] = [];
    pool.on('connect', () => connects.push(1));
    try {
      const results = await Promise.all(Array.from({ length: 2000 }, (_, i) => pool.query('select $1::int as i', [i])));
      results.forEach((r, i) => expect(r.rows[0].i).toBe(i));
      expect(p.pooler.stats().clients).toBe(2000); // 2,000 sessions at the pooler, one per stream
      expect(pool.totalCount).toBe(2000);
      expect(connects.length).toBe(2000);
      const s = pool.sessions!.stats();
      expect(s.connections).toBeLessThanOrEqual(50);
      expect(s.connections).toBeGreaterThanOrEqual(45); // 2,000 sessions need (nearly) all of them
      expect(s.streamsInUse).toBe(2000);
      expect(s.acquired).toBe(2000);
      expect(s.connectionFailures + s.connectionsLost + s.acquireFailures).toBe(0);
      // Every session is reused: a second wave opens no new stream.
      await Promise.all(Array.from({ length: 2000 }, (_, i) => pool.query('select $1::int as i', [i])));
      expect(pool.sessions!.stats().acquired).toBe(2000);
    } finally {
      await pool.end();
    }
    expect(pool.sessions!.stats().streamsInUse).toBe(0);
  }, 60_000);

  it('runs transactions through connect/release, with pg.Pool events', async () => {
    const pool = new QuicPool({ ...scramLogin, max: 4, quic: await quicOptions([p.endpoint]) });
    const events: string[] = [];
    for (const e of ['connect', 'acquire', 'release', 'remove'] as const) pool.on(e, () => events.push(e));
    try {
      const a = await pool.connect();
      const b = await pool.connect();
      await a.query('begin');
      await a.query(`insert into ${table} values (1, 'a')`);
      expect((await b.query(`select count(*)::int as n from ${table} where id = 1`)).rows[0].n).toBe(0); // not committed yet
      await a.query('commit');
      expect((await b.query(`select v from ${table} where id = 1`)).rows[0].v).toBe('a');
      await b.query('begin');
      await b.query(`insert into ${table} values (2, 'b')`);
      await b.query('rollback');
      expect((await a.query(`select count(*)::int as n from ${table} where id = 2`)).rows[0].n).toBe(0);
      expect(pool.idleCount).toBe(0);
      a.release();
      b.release();
      expect(pool.idleCount).toBe(2);
      expect(pool.totalCount).toBe(2);
      expect(events.filter((e) => e === 'connect')).toHaveLength(2);
      expect(events.filter((e) => e === 'release')).toHaveLength(2);
    } finally {
      await pool.end();
    }
    expect(events.filter((e) => e === 'remove')).toHaveLength(2);
  }, 20_000);

  it('reports errors with their SQLSTATE and stays usable; release(err) removes the client', async () => {
    const pool = new QuicPool({ ...scramLogin, max: 2, quic: await quicOptions([p.endpoint]) });
    try {
      expect((await rejection(pool.query('select 1/0'))).code).toBe('22012');
      expect((await rejection(pool.query('selec 1'))).code).toBe('42601');
      expect((await pool.query('select 2 as x')).rows[0].x).toBe(2);
      const c = await pool.connect();
      await c.query('begin');
      expect((await rejection(c.query(`insert into ${table} values (1, 'dup')`))).code).toBe('23505');
      expect((await rejection(c.query('select 1'))).code).toBe('25P02'); // aborted transaction
      await c.query('rollback');
      const removed = new Promise((r) => pool.once('remove', r));
      c.release(new Error('discard this client'));
      await removed;
      expect(pool.totalCount).toBe(0); // the pool had reused its one idle client
      await until(() => pool.sessions!.stats().streamsInUse === 0);
    } finally {
      await pool.end();
    }
  }, 20_000);

  it('end() while busy: running queries finish, waiting ones are refused, then everything closes', async () => {
    const pool = new QuicPool({ ...trustLogin, max: 3, quic: await quicOptions([p.endpoint]) });
    const running = [0, 1, 2].map((i) => pool.query('select pg_sleep(0.3), $1::int as i', [i]));
    await until(() => pool.totalCount === 3 && pool.idleCount === 0);
    const waiting = [3, 4].map((i) => rejection(pool.query('select $1::int as i', [i])));
    await until(() => pool.waitingCount === 2);
    const ended = pool.end();
    expect((await Promise.all(running)).map((r) => r.rows[0].i)).toEqual([0, 1, 2]);
    for (const w of waiting) expect((await w).message).toMatch(/after calling end/);
    await ended;
    expect(pool.totalCount).toBe(0);
    expect((await rejection(pool.query('select 1'))).message).toMatch(/after calling end/);
    expect((await rejection(pool.sessions!.acquire())).message).toMatch(/closed/);
  }, 20_000);

  it("honours pg.Pool's connectionTimeoutMillis while waiting for a session stream", async () => {
    const manager = new SessionManager(await quicOptions([p.endpoint], { maxConnections: 1, streamsPerConnection: 1 }));
    const pool = new QuicPool({ ...trustLogin, max: 2, connectionTimeoutMillis: 1_000, quic: manager });
    try {
      await manager.warm(); // the QUIC handshake is not part of what is timed here
      const held = await pool.connect(); // the manager's only stream
      const err = await rejection(pool.connect());
      expect(err.message).toMatch(/connection timeout/);
      expect(manager.stats().waiting).toBe(0); // the acquire was withdrawn
      held.release();
      expect((await pool.query('select 3 as x')).rows[0].x).toBe(3);
    } finally {
      await pool.end();
      await manager.close();
    }
  }, 20_000);

  it('ignores sslmode in a connection string and PGSSLMODE (QUIC is always TLS 1.3)', async () => {
    const url = `postgresql://${encodeURIComponent(pgInfo.user)}:${encodeURIComponent(pgInfo.password)}@db.invalid/${pgInfo.database}?sslmode=require&sslrootcert=/nonexistent/root.crt&application_name=from-url`;
    const saved = process.env['PGSSLMODE'];
    process.env['PGSSLMODE'] = 'verify-full';
    const pool = new QuicPool({ connectionString: url, max: 2, quic: await quicOptions([p.endpoint]) });
    try {
      const r = await pool.query('select current_user as u, current_setting($1) as app', ['application_name']);
      expect(r.rows[0]).toEqual({ u: pgInfo.user, app: 'from-url' });
    } finally {
      if (saved === undefined) delete process.env['PGSSLMODE'];
      else process.env['PGSSLMODE'] = saved;
      await pool.end();
    }
  });

  it("keeps one code path for plain TCP: transport 'tcp'", async () => {
    const pool = new QuicPool({ ...scramLogin, transport: 'tcp', host: '127.0.0.1', port: p.tcpPort, max: 2 });
    try {
      expect(pool.sessions).toBeNull();
      expect((await pool.query('select current_user as u')).rows[0].u).toBe(pgInfo.user);
    } finally {
      await pool.end();
    }
  }, 20_000);

  it('gives pg.Client users a stream factory (pgStream) and a QuicClient', async () => {
    const manager = new SessionManager(await quicOptions([p.endpoint]));
    try {
      const c = new pg.Client({ ...scramLogin, stream: await pgStream(manager) });
      await c.connect();
      expect((await c.query('select 41 + 1 as x')).rows[0].x).toBe(42);
      await c.end();
      const q = new QuicClient({ ...scramLogin, sessions: manager });
      await q.connect();
      expect(q.sessionStream?.info.kind).toBe('quic');
      expect((await q.query('select 7 as x')).rows[0].x).toBe(7);
      expect((await rejection(q.connect())).message).toMatch(/already been connected/);
      await q.end();
      await until(() => manager.stats().streamsInUse === 0);
      expect(manager.stats().connections).toBe(1); // both sessions shared one QUIC connection
    } finally {
      await manager.close();
    }
  }, 20_000);
});
