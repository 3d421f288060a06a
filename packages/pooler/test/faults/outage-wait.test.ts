// Postgres restarted (fast and immediate shutdown) while 20 clients run single-statement queries
// in transaction pooling, over TCP and over QUIC: only the queries in flight when the server went
// away fail; every query begun while it was down waits and is answered once it is back; the
// pooler tells when the outage began and ended. And an outage the server itself announces (53300,
// a role's connection limit): its clients wait and are served when it passes, while a wrong
// password and a missing database still fail at once with their own SQLSTATE. Uses a cluster of
// its own: the run's shared cluster is never restarted.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { queryLoop, startPostgres } from '@quicpool/pg-fixture';
import type { PostgresServer, QueryRecord, ShutdownMode } from '@quicpool/pg-fixture';
import { generateDevCertificates, listenTcp, QuicListener } from '@quicpool/transport';
import { createPooler } from '../support/create-pooler.js';
import type { Pooler, UpstreamEvent } from '../../src/index.js';
import { QuicSessions } from '../support/quic-sessions.js';
import { withClient } from '../support/pooler-helpers.js';
import { createFaultRole, sleep, superuser, until } from './helpers.js';
import type { FaultRole } from './helpers.js';

const CLIENTS = 20;
let server: PostgresServer;
let role: FaultRole;
let pooler: Pooler;
let tcpPort: number;
let quicPort: number;
let ca: string;
const events: UpstreamEvent[] = [];
const quic = new QuicSessions(() => ({ port: quicPort, ca }));

beforeAll(async () => {
  server = await startPostgres();
  role = await createFaultRole(server.info, 'fault_outage');
  const certs = await generateDevCertificates({ names: ['localhost'] });
  ca = certs.caPem;
  pooler = createPooler({
    server: { host: server.info.host, port: server.info.port, connectTimeoutMs: 5_000 },
    users: { [role.user]: { password: role.password }, [server.info.user]: { password: server.info.password } },
    pool: { poolSize: 10, queryWaitTimeoutMs: 30_000 },
  });
  pooler.events.upstream.add((e) => void events.push(e));
  const tcp = await listenTcp({ host: '127.0.0.1', port: 0 });
  pooler.listen(tcp);
  tcpPort = tcp.address().port;
  const listener = await QuicListener.listen({ cert: certs.certPem, key: certs.keyPem, host: '127.0.0.1', port: 0 });
  pooler.listen(listener);
  quicPort = listener.address().port;
}, 60_000);
afterAll(async () => {
  await quic.closeAll();
  await pooler?.close({ graceful: false });
  await server?.stop();
});

const clientConfig = (over: pg.ClientConfig = {}): pg.ClientConfig => ({ host: '127.0.0.1', port: tcpPort, database: server.info.database, user: role.user, password: role.password, ...over });

async function tcpClient(): Promise<pg.Client> {
  const c = new pg.Client(clientConfig());
  c.on('error', () => undefined);
  await c.connect();
  return c;
}

async function quicClient(dialer: ReturnType<QuicSessions['dialer']>): Promise<pg.Client> {
  return (await quic.client(dialer, { database: server.info.database, user: role.user, password: role.password })).c;
}

/**
 * Runs the load, stops the server with `mode`, keeps it down for a moment (queries keep coming),
 * starts it again and lets the load run on; returns every query and the moments the server was
 * down (from its stop's end to its start's end).
 */
async function restartUnderLoad(connect: () => Promise<pg.Client>, mode: ShutdownMode): Promise<{ records: QueryRecord[]; downAt: number; upAt: number }> {
  const served = (): number => pooler.stats().pools.reduce((n, p) => n + p.xactCountTotal, 0);
  const before = served();
  const load = queryLoop(connect, CLIENTS, 'select $1::int as n');
  await until('the load runs', () => served() > before + 100, 10_000);
  await server.shutdown(mode);
  const downAt = performance.now();
  await sleep(300);
  await server.startAgain();
  const upAt = performance.now();
  await until('the load runs on', () => pooler.stats().pools.every((p) => !p.serverDown), 10_000);
  await sleep(150);
  load.stop();
  return { records: await load.done, downAt, upAt };
}

function expectOnlyInFlightFailed(r: { records: QueryRecord[]; downAt: number; upAt: number }): void {
  const failed = r.records.filter((q) => q.error !== null);
  // Each client had at most one query in flight when the server went away.
  expect(failed.length).toBeLessThanOrEqual(CLIENTS);
  for (const q of failed) {
    expect(['57P01', '57P02', '08006']).toContain(q.error);
    expect(q.began).toBeLessThan(r.downAt); // in flight when the server stopped
  }
  // Every query begun after the stop was answered; those still waiting when the server came back
  // (the clients whose query failed connect again and query on at once, during the outage; the
  // others waited for a backend across it) were answered after it.
  expect(r.records.filter((q) => q.began > r.downAt).every((q) => q.error === null)).toBe(true);
  const waited = r.records.filter((q) => q.began < r.upAt && q.ended > r.upAt);
  expect(waited.length).toBeGreaterThan(0);
  for (const q of waited) expect(q.error).toBeNull();
}

function expectOutageLogged(): void {
  const down = events.findIndex((e) => e.type === 'serverDown' && e.user === role.user);
  const up = events.findIndex((e, i) => i > down && e.type === 'serverUp' && e.user === role.user);
  expect(down).toBeGreaterThanOrEqual(0);
  expect(up).toBeGreaterThan(down);
  const start = events[down]!;
  expect(start.type === 'serverDown' && ['ECONNREFUSED', 'ENOENT', 'ECONNRESET', '57P03', '57P01'].includes(start.reason)).toBe(true);
  events.length = 0;
}

describe('Postgres restarted under load: clients wait instead of failing', () => {
  for (const mode of ['fast', 'immediate'] as const) {
    it(`over TCP, ${mode} shutdown: only queries in flight fail, every later one is answered`, async () => {
      expectOnlyInFlightFailed(await restartUnderLoad(tcpClient, mode));
      expectOutageLogged();
    }, 60_000);

    it(`over QUIC, ${mode} shutdown: only queries in flight fail, every later one is answered`, async () => {
      const dialers = Array.from({ length: 2 }, () => quic.dialer());
      let n = 0;
      expectOnlyInFlightFailed(await restartUnderLoad(() => quicClient(dialers[n++ % dialers.length]!), mode));
      expectOutageLogged();
    }, 60_000);
  }
});

describe('an outage the server announces (53300)', () => {
  it('waits through it, while a wrong password and a missing database fail at once with their own SQLSTATE', async () => {
    const limited = await createFaultRole(server.info, 'fault_limited');
    await superuser(server.info, (c) => c.query(`ALTER ROLE ${limited.user} CONNECTION LIMIT 0`));
    const p2 = createPooler({
      server: { host: server.info.host, port: server.info.port },
      users: { [limited.user]: { password: limited.password }, [role.user]: { password: role.password, serverPassword: 'wrong' }, [server.info.user]: { password: server.info.password } },
      pool: { poolSize: 2, queryWaitTimeoutMs: 30_000 },
    });
    const seen: UpstreamEvent[] = [];
    p2.events.upstream.add((e) => void seen.push(e));
    const tcp = await listenTcp({ host: '127.0.0.1', port: 0 });
    p2.listen(tcp);
    const at = { host: '127.0.0.1', port: tcp.address().port, database: server.info.database };
    try {
      // The limited role's pool cannot log in (53300, too many connections for role): its client waits.
      const waiting = withClient({ ...at, user: limited.user, password: limited.password }, async (c) => (await c.query('select 1 as one')).rows[0].one as number);
      await until('the pool is down', () => p2.stats().pools.some((p) => p.user === limited.user && p.serverDown), 10_000);
      expect(seen.find((e) => e.type === 'serverDown')).toMatchObject({ user: limited.user, reason: '53300' });

      // Meanwhile what does not pass fails at once: the client's wrong password (the pooler's own
      // 28P01), the pooler's wrong server password (08004), a database that does not exist (3D000).
      const code = (c: pg.ClientConfig) => withClient(c, (c) => c.query('select 1')).then(() => 'ok', (e: { code?: string }) => e.code);
      expect(await code({ ...at, user: limited.user, password: 'not-the-password' })).toBe('28P01');
      expect(await code({ ...at, user: role.user, password: role.password })).toBe('08004');
      expect(await code({ ...at, database: 'no_such_database', user: server.info.user, password: server.info.password })).toBe('3D000');

      await superuser(server.info, (c) => c.query(`ALTER ROLE ${limited.user} CONNECTION LIMIT -1`));
      expect(await waiting).toBe(1);
      expect(seen.some((e) => e.type === 'serverUp' && e.user === limited.user)).toBe(true);
      expect(p2.view().serverLoginFailuresTotal['53300']).toBeGreaterThan(0);
    } finally {
      await p2.close({ graceful: false });
    }
  }, 60_000);
});
