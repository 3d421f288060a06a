// `quicpool start` with two worker threads, against the run's real PostgreSQL: both workers
// serve the one TCP port and the one UDP port (QUIC steered by connection id), the server budget
// and the admin console are the daemon's, a CancelRequest finds its session's worker, a worker
// that dies is replaced while the other goes on.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createTestDatabase, dropTestDatabase, untilQueryRunning, withPgClient } from '@quicpool/pg-fixture';
import type {} from '@quicpool/pg-fixture';
import { forNodePostgres, QuicDialer, QuicTicketStore } from '@quicpool/transport';
import { startDaemon } from './daemon.js';
import type { Daemon } from './daemon.js';

const upstream = inject('pg');
const DB = 'qp_daemon_workers';
const NEW_ADMIN = upstream.md5User;
let dir: string;
let file: string;
let daemon: Daemon;
let port: number;
let quicPort: number;
let metricsPort: number;
let ca: string;

const configText = (admins: readonly string[]): string => `
[upstream]
host = "${upstream.host}"
port = ${upstream.port}
[workers]
count = 2
[pool]
size = 5
query_wait_timeout_ms = 30000
[admin]
users = ${JSON.stringify(admins)}
[users.${upstream.user}]
password = "${upstream.password}"
[users.${upstream.md5User}]
password = "${upstream.md5Password}"
`;

type Row = Record<string, string>;
const direct = { host: upstream.host, port: upstream.port, user: upstream.user, password: upstream.password, database: upstream.database };

async function client(database = DB, user = upstream.user, password = upstream.password): Promise<pg.Client & { errors: (Error & { code?: string })[] }> {
  const c = Object.assign(new pg.Client({ host: '127.0.0.1', port, user, password, database }), { errors: [] as (Error & { code?: string })[] });
  c.on('error', (e) => c.errors.push(e));
  await c.connect();
  return c;
}

async function admin<T = Row>(sql: string): Promise<T[]> {
  const c = await client('quicpool');
  try {
    return (await c.query(sql)).rows as T[];
  } finally {
    await c.end();
  }
}

/** The worker serving each of `clients` (by their local port in SHOW CLIENTS). */
async function workersOf(clients: readonly pg.Client[]): Promise<number[]> {
  const rows = await admin('SHOW CLIENTS');
  return clients.map((c) => {
    const localPort = (c as unknown as { connection: { stream: { localPort: number } } }).connection.stream.localPort;
    const row = rows.find((r) => Number(r['port']) === localPort);
    if (row === undefined) throw new Error(`no SHOW CLIENTS row for port ${localPort}`);
    return Number(row['worker']);
  });
}

/** Server processes of DB in pg_stat_activity now. */
const backends = (): Promise<number> =>
  withPgClient(direct, async (c) => (await c.query(`select count(*)::int as n from pg_stat_activity where datname = $1 and backend_type = 'client backend'`, [DB])).rows[0].n as number);

beforeAll(async () => {
  await createTestDatabase(upstream, DB);
  dir = await mkdtemp(join(tmpdir(), 'quicpool-workers-'));
  file = join(dir, 'quicpool.toml');
  await writeFile(file, configText([upstream.user]));
  daemon = await startDaemon(['--config', file, '--state-dir', dir, '--port', '0', '--quic-port', '0', '--metrics-port', '0', '--set', 'log.format=json', '--set', 'workers.count=2']);
  [port, quicPort, metricsPort] = [daemon.port('tcp'), daemon.port('quic'), daemon.port('metrics')];
  ca = await readFile(join(dir, 'certs', 'ca.pem'), 'utf8');
});

afterAll(async () => {
  if (daemon !== undefined) expect(await daemon.stop()).toBe(0);
  await rm(dir, { recursive: true, force: true });
  await dropTestDatabase(upstream, DB);
});

describe('two workers behind one port', () => {
  it('says so in the banner, the ready line and SHOW WORKERS', async () => {
    expect(daemon.output()).toMatch(/Workers: {2}2 threads on the same ports, QUIC steered by connection id \(BPF\)/);
    expect(daemon.output()).toMatch(/"workers":2,"quicWorkers":"steered by connection id \(BPF\)"/);
    const rows = await admin('SHOW WORKERS');
    expect(rows.map((r) => [r['worker'], r['state'], r['restarts']])).toEqual([['0', 'running', '0'], ['1', 'running', '0']]);
    expect(new Set(rows.map((r) => r['thread'])).size).toBe(2);
  });

  it('200 QUIC sessions over 20 connections, spread over both workers, each connection on one', async () => {
    const dialers = Array.from({ length: 20 }, () => new QuicDialer({ host: '127.0.0.1', port: quicPort, serverName: 'localhost', ca }));
    const sessions: pg.Client[] = [];
    try {
      for (const d of dialers) {
        for (let i = 0; i < 10; i++) {
          const s = await d.open();
          const c = new pg.Client({ user: upstream.user, password: upstream.password, database: DB, stream: () => forNodePostgres(s) });
          c.on('error', () => undefined);
          sessions.push(c);
        }
      }
      await Promise.all(sessions.map((c) => c.connect()));
      const answers = await Promise.all(sessions.map(async (c, i) => (await c.query('select $1::int as i', [i])).rows[0].i as number));
      expect(answers).toEqual(sessions.map((_, i) => i));
      const quic = await admin('SHOW QUIC');
      expect(quic.map((r) => Number(r['connections'])).reduce((a, b) => a + b)).toBe(20);
      for (const r of quic) expect(Number(r['connections'])).toBeGreaterThan(0); // both (all on one: 2^-19)
      for (const r of quic) expect(r['datagrams_dropped']).toBe('0');
      // Every session of a connection is on that connection's worker.
      const clients = (await admin('SHOW CLIENTS')).filter((r) => r['transport'] === 'quic' && r['database'] === DB);
      expect(clients).toHaveLength(200);
      const byPort = new Map<string, Set<string>>();
      for (const r of clients) byPort.set(r['port']!, (byPort.get(r['port']!) ?? new Set()).add(r['worker']!));
      expect(byPort.size).toBe(20);
      for (const workers of byPort.values()) expect(workers.size).toBe(1);
    } finally {
      await Promise.all(sessions.map((c) => c.end().catch(() => undefined)));
      await Promise.all(dialers.map((d) => d.close({ graceful: false })));
    }
  });

  it('a connection that migrates (NAT rebinding) keeps every session on its worker', async () => {
    const d = new QuicDialer({ host: '127.0.0.1', port: quicPort, serverName: 'localhost', ca });
    const sessions = await Promise.all([0, 1, 2].map(async () => {
      const s = await d.open();
      const c = new pg.Client({ user: upstream.user, password: upstream.password, database: DB, stream: () => forNodePostgres(s) });
      await c.connect();
      return c;
    }));
    try {
      const before = await admin('SHOW QUIC');
      const ep = await d.endpoint();
      const oldPort = ep.socketPort();
      await ep.rebind();
      expect(ep.socketPort()).not.toBe(oldPort);
      for (const [i, c] of sessions.entries()) expect((await c.query('select $1::int as i', [i])).rows[0].i).toBe(i);
      const after = await admin('SHOW QUIC');
      expect(after.map((r) => r['handshakes'])).toEqual(before.map((r) => r['handshakes'])); // no new connection
      expect(after.map((r) => r['datagrams_dropped'])).toEqual(['0', '0']);
      // SHOW CLIENTS shows each session's address as it was accepted; all three on one worker.
      const rows = (await admin('SHOW CLIENTS')).filter((r) => r['transport'] === 'quic' && r['port'] === String(oldPort));
      expect(rows).toHaveLength(3);
      expect(new Set(rows.map((r) => r['worker'])).size).toBe(1);
    } finally {
      await Promise.all(sessions.map((c) => c.end()));
      await d.close({ graceful: false });
    }
  });

  it('a 0-RTT ticket issued by one worker is accepted by the other', async () => {
    const tickets = new QuicTicketStore();
    const handshakes = async (): Promise<number[]> => (await admin('SHOW QUIC')).map((r) => Number(r['handshakes']));
    const before = await handshakes();
    const first = new QuicDialer({ host: '127.0.0.1', port: quicPort, serverName: 'localhost', ca, tickets });
    const s0 = await first.open();
    s0.on('error', () => undefined);
    for (let i = 0; i < 200 && tickets.size === 0; i++) await new Promise((r) => setTimeout(r, 10));
    s0.end();
    await first.close({ graceful: false });
    const issuer = (await handshakes()).findIndex((n, w) => n > before[w]!);
    expect(tickets.size).toBe(1);
    // A resumed connection picks its worker by its own random DCID: resume until one lands on the other.
    let resumedElsewhere = false;
    for (let attempt = 0; attempt < 30 && !resumedElsewhere; attempt++) {
      const counts = await handshakes();
      const d = new QuicDialer({ host: '127.0.0.1', port: quicPort, serverName: 'localhost', ca, tickets });
      try {
        const s = await d.open();
        expect(s.info.quic?.earlyData).toBe(true); // its StartupMessage leaves as 0-RTT data
        const c = new pg.Client({ user: upstream.user, password: upstream.password, database: DB, stream: () => forNodePostgres(s) });
        await c.connect();
        expect((await c.query('select 1 as one')).rows[0].one).toBe(1);
        const worker = (await handshakes()).findIndex((n, w) => n > counts[w]!);
        resumedElsewhere = worker !== issuer;
        await c.end();
      } finally {
        await d.close({ graceful: false });
      }
    }
    expect(resumedElsewhere).toBe(true);
    // The other worker decrypted the ticket and took the early data: the daemon counted 0-RTT sessions.
    expect(Number((await admin('SHOW QUIC'))[0]?.['early_data_sessions'])).toBeGreaterThan(0);
  });

  it('pool.size = 5 holds for both workers: 40 clients, every transaction completes, never more than 5 in pg_stat_activity', async () => {
    const clients = await Promise.all(Array.from({ length: 40 }, () => client()));
    try {
      expect(new Set(await workersOf(clients))).toEqual(new Set([0, 1]));
      let most = 0;
      let running = true;
      const watch = (async () => {
        while (running) {
          most = Math.max(most, await backends());
          await new Promise((r) => setTimeout(r, 5));
        }
      })();
      const done = await Promise.all(clients.map(async (c, i) => {
        for (let t = 0; t < 10; t++) {
          await c.query('begin');
          expect((await c.query('select $1::int as i', [i])).rows[0].i).toBe(i);
          await c.query('commit');
        }
        return 10;
      }));
      running = false;
      await watch;
      expect(done.reduce((a, b) => a + b)).toBe(400);
      expect(most).toBeGreaterThan(0);
      expect(most).toBeLessThanOrEqual(5);
      const pools = await admin('SHOW POOLS');
      const mine = pools.find((r) => r['database'] === DB)!;
      expect(Number(mine['sv_active']) + Number(mine['sv_idle']) + Number(mine['sv_used']) + Number(mine['sv_tested']) + Number(mine['sv_login'])).toBeLessThanOrEqual(5);
    } finally {
      await Promise.all(clients.map((c) => c.end()));
    }
  });
});

describe('cancels from anywhere', () => {
  it('a pg_sleep on one worker is cancelled by CancelRequests that land on the other (TCP); a wrong key cancels nothing', async () => {
    const sessions = await Promise.all(Array.from({ length: 4 }, () => client()));
    try {
      const target = sessions[0]!;
      const [targetWorker] = await workersOf([target]);
      const other = 1 - targetWorker!;
      const key = target as unknown as { processID: number; secretKey: number };
      const stats = async (w: number): Promise<{ requests: number; forwarded: number }> => {
        const row = (await admin('SHOW WORKERS'))[w]!;
        return { requests: Number(row['cancel_requests']), forwarded: Number(row['cancels_forwarded']) };
      };
      const base = { t: await stats(targetWorker!), o: await stats(other) };
      const sleep = async (tag: string, cancelWith: number): Promise<(Error & { code?: string }) | pg.QueryResult> => {
        const sql = `select pg_sleep(30) -- ${tag}`;
        const q = target.query(sql).catch((e: Error & { code?: string }) => e);
        await withPgClient(direct, (c) => untilQueryRunning(c, sql));
        await cancel(key.processID, cancelWith);
        return q;
      };
      // A wrong key, from four connections (both workers, most likely): the query runs on.
      const wrongSql = 'select pg_sleep(30) -- a wrong key cancels nothing';
      const wrong = target.query(wrongSql).catch((e: Error & { code?: string }) => e);
      await withPgClient(direct, (c) => untilQueryRunning(c, wrongSql));
      for (let i = 0; i < 4; i++) await cancel(key.processID, key.secretKey ^ 0x5a5a);
      await withPgClient(direct, (c) => untilQueryRunning(c, wrongSql));
      expect((await stats(targetWorker!)).forwarded).toBe(base.t.forwarded);
      await cancel(key.processID, key.secretKey);
      expect(await wrong).toMatchObject({ code: '57014' });
      // The right key from fresh connections until the kernel has put one on the other worker.
      let right = 1;
      while ((await stats(other)).requests === base.o.requests && right < 30) {
        expect(await sleep(`cancelled from anywhere ${right}`, key.secretKey)).toMatchObject({ code: '57014' });
        right++;
      }
      const [t, o] = [await stats(targetWorker!), await stats(other)];
      // Requests landed on both workers (4 wrong and `right` right ones in all) ...
      expect(t.requests - base.t.requests + o.requests - base.o.requests).toBe(4 + right);
      expect(o.requests).toBeGreaterThan(base.o.requests);
      // ... and only the session's worker sent cancels to the server: one per right key.
      expect(o.forwarded).toBe(base.o.forwarded);
      expect(t.forwarded - base.t.forwarded).toBe(right);
      expect((await target.query('select 1 as ok')).rows[0].ok).toBe(1);
    } finally {
      await Promise.all(sessions.map((c) => c.end()));
    }
  });

  it('over QUIC: a CancelRequest on a fresh stream of a connection of the other worker', async () => {
    const dialers: QuicDialer[] = [];
    const open = async (d: QuicDialer): Promise<pg.Client> => {
      const s = await d.open();
      const c = new pg.Client({ user: upstream.user, password: upstream.password, database: DB, stream: () => forNodePostgres(s) });
      c.on('error', () => undefined);
      await c.connect();
      return c;
    };
    const workerOfDialer = async (d: QuicDialer): Promise<number> => {
      const local = (await d.endpoint()).socketPort();
      const row = (await admin('SHOW CLIENTS')).find((r) => r['transport'] === 'quic' && Number(r['port']) === local);
      return Number(row?.['worker']);
    };
    try {
      const a = new QuicDialer({ host: '127.0.0.1', port: quicPort, serverName: 'localhost', ca });
      dialers.push(a);
      const session = await open(a);
      const workerA = await workerOfDialer(a);
      // Another connection, on the other worker (its first DCID picks it: try until it is).
      let b: QuicDialer | null = null;
      for (let i = 0; i < 30 && b === null; i++) {
        const d = new QuicDialer({ host: '127.0.0.1', port: quicPort, serverName: 'localhost', ca });
        dialers.push(d);
        const probe = await open(d);
        if ((await workerOfDialer(d)) !== workerA) b = d;
        await probe.end();
      }
      expect(b).not.toBeNull();
      const sql = 'select pg_sleep(30) -- cancelled over QUIC from the other worker';
      const q = session.query(sql).catch((e: Error & { code?: string }) => e);
      await withPgClient(direct, (c) => untilQueryRunning(c, sql));
      const key = session as unknown as { processID: number; secretKey: number };
      // pg's cancel on a stream of connection b: the CancelRequest reaches b's worker.
      const stream = await b!.open();
      const raw = new pg.Client({ stream: () => forNodePostgres(stream) }) as pg.Client & { cancel(t: unknown, q: unknown): void };
      (raw as unknown as { connection: NodeJS.EventEmitter }).connection.on('error', () => undefined);
      raw.cancel(Object.assign(new pg.Client(), { processID: key.processID, secretKey: key.secretKey }), null);
      expect(await q).toMatchObject({ code: '57014' });
      expect((await session.query('select 1 as ok')).rows[0].ok).toBe(1);
      await session.end();
    } finally {
      await Promise.all(dialers.map((d) => d.close({ graceful: false })));
    }
  });
});

describe('one pooler to its operators', () => {
  it('SHOW STATS and /metrics add up both workers; SHOW WORKERS lists them', async () => {
    const before = await admin('SHOW STATS');
    const xacts = (rows: Row[]): number => Number(rows.find((r) => r['database'] === DB)?.['total_xact_count'] ?? 0);
    const clients = await Promise.all(Array.from({ length: 8 }, () => client()));
    try {
      expect(new Set(await workersOf(clients))).toEqual(new Set([0, 1]));
      await Promise.all(clients.map(async (c) => {
        for (let i = 0; i < 5; i++) await c.query('select 1');
      }));
      expect(xacts(await admin('SHOW STATS')) - xacts(before)).toBe(40);
      // SHOW CLIENTS lists the sessions of both workers; SHOW WORKERS counts them per worker.
      const ours = new Set((await Promise.all(clients.map((c) => workersOf([c])))).flat());
      expect(ours).toEqual(new Set([0, 1]));
      const listing = await admin('SHOW CLIENTS');
      const perWorker = (await admin('SHOW WORKERS')).map((w) => Number(w['clients']));
      // (each admin() is a session of its own, counted where it runs: one more in the second look)
      expect(perWorker.reduce((a, b) => a + b)).toBe(listing.length);
      const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      // One series per transport, each the sum of both workers' counters.
      const series = [...metrics.matchAll(new RegExp(`^quicpool_transactions_total\\{database="${DB}",user="${upstream.user}",transport="\\w+"\\} (\\d+)$`, 'gm'))].map((m) => Number(m[1]));
      expect(series.reduce((a, b) => a + b)).toBe(xacts(await admin('SHOW STATS')));
      expect(metrics).toMatch(/^quicpool_worker_up\{worker="0"\} 1$/m);
      expect(metrics).toMatch(/^quicpool_worker_up\{worker="1"\} 1$/m);
      expect(metrics).toMatch(/^quicpool_worker_cpu_seconds_total\{worker="1"\} [\d.]+$/m);
    } finally {
      await Promise.all(clients.map((c) => c.end()));
    }
  });

  it('RELOAD reaches both workers', async () => {
    const adminLogin = async (): Promise<{ worker: number; ok: boolean; code?: string }> => {
      const c = new pg.Client({ host: '127.0.0.1', port, user: NEW_ADMIN, password: upstream.md5Password, database: 'quicpool' });
      c.on('error', () => undefined);
      try {
        await c.connect();
        const [self] = await workersOf([c]).catch(() => [-1]);
        await c.end();
        return { worker: self!, ok: true };
      } catch (e) {
        return { worker: -1, ok: false, code: (e as { code?: string }).code! };
      }
    };
    expect(await adminLogin()).toMatchObject({ ok: false, code: '28000' });
    await writeFile(file, configText([upstream.user, NEW_ADMIN]));
    await admin('RELOAD');
    // The new admin gets in on both workers (the kernel spreads the logins over them).
    const seen = new Set<number>();
    for (let i = 0; i < 30 && seen.size < 2; i++) {
      const r = await adminLogin();
      expect(r.ok).toBe(true);
      seen.add(r.worker);
    }
    expect(seen).toEqual(new Set([0, 1]));
    await writeFile(file, configText([upstream.user]));
    await admin('RELOAD');
  });

  it('KILL WORKER: the worker is replaced, its clients get 57P01, the other serves on and gets the budget back', async () => {
    const clients = await Promise.all(Array.from({ length: 10 }, () => client()));
    // An admin session on worker 0, and at least 5 clients there (the kernel spreads connections).
    const console0 = await onWorker(0, () => client('quicpool'));
    const more: pg.Client[] = [];
    try {
      let where = await workersOf(clients);
      while (where.filter((w) => w === 0).length < 5 && more.length < 40) {
        more.push(await client());
        where = await workersOf([...clients, ...more]);
      }
      const all = [...clients, ...more] as Awaited<ReturnType<typeof client>>[];
      expect(new Set(where)).toEqual(new Set([0, 1]));
      // Both workers hold server connections of the pool.
      await Promise.all(all.map((c) => c.query('select pg_sleep(0.05)')));
      await console0.query('KILL WORKER 1');
      const onOne = all.filter((_, i) => where[i] === 1);
      const onZero = all.filter((_, i) => where[i] === 0);
      await Promise.all(onOne.map((c) => new Promise<void>((resolve) => (c.errors.length > 0 ? resolve() : c.once('error', () => resolve())))));
      for (const c of onOne) expect(c.errors[0]).toMatchObject({ code: '57P01' });
      for (const c of onZero) expect((await c.query('select 1 as ok')).rows[0].ok).toBe(1);
      // Replaced: running again, one restart.
      for (let i = 0; i < 100; i++) {
        const w = (await console0.query('SHOW WORKERS')).rows[1] as Row;
        if (w['state'] === 'running' && w['restarts'] === '1') break;
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(((await console0.query('SHOW WORKERS')).rows as Row[]).map((w) => [w['state'], w['restarts']])).toEqual([['running', '0'], ['running', '1']]);
      expect(daemon.output()).toMatch(/"worker":1,.*"msg":"worker failed: closing its client sessions and exiting"/);
      // Its server connections are gone and its budget came back: worker 0 uses all 5 at once.
      const busy = Promise.all(onZero.slice(0, 5).map((c) => c.query('select pg_sleep(0.5)')));
      await new Promise((r) => setTimeout(r, 250));
      expect(await backends()).toBe(5);
      await busy;
    } finally {
      await console0.end();
      await Promise.all([...clients, ...more].map((c) => c.end().catch(() => undefined)));
    }
  });
});

/** A client from `connect` that the kernel put on `worker` (new connections until one is). */
async function onWorker(worker: number, connect: () => Promise<pg.Client>): Promise<pg.Client> {
  for (let i = 0; i < 40; i++) {
    const c = await connect();
    if ((await workersOf([c]))[0] === worker) return c;
    await c.end();
  }
  throw new Error(`no connection landed on worker ${worker}`);
}

/** A CancelRequest on a fresh TCP connection (pg's own cancel), resolved once the pooler closed it. */
async function cancel(processID: number, secretKey: number): Promise<void> {
  const c = new pg.Client({ host: '127.0.0.1', port, user: upstream.user, database: DB }) as pg.Client & { cancel(t: unknown, q: unknown): void };
  const conn = (c as unknown as { connection: NodeJS.EventEmitter }).connection;
  conn.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => conn.once('end', () => resolve()));
  c.cancel(Object.assign(new pg.Client(), { processID, secretKey }), null);
  await closed;
}

describe('the default', () => {
  it('runs one worker per core', async () => {
    const d2 = await mkdtemp(join(tmpdir(), 'quicpool-workers-default-'));
    const f2 = join(d2, 'quicpool.toml');
    await writeFile(f2, configText([upstream.user]).replace('[workers]\ncount = 2\n', ''));
    const d = await startDaemon(['--config', f2, '--state-dir', d2, '--port', '0', '--quic-port', '0', '--set', 'metrics.enabled=false', '--set', 'log.format=json', '--set', 'workers.count=0']);
    try {
      const n = availableParallelism();
      expect(d.output()).toContain(n === 1 ? 'Workers:  1 (in the main thread)' : `Workers:  ${n} threads on the same ports, QUIC steered by connection id (BPF)`);
    } finally {
      expect(await d.stop()).toBe(0);
      await rm(d2, { recursive: true, force: true });
    }
  });

  it('without the native UDP module: one worker, and the log says why', async () => {
    const d2 = await mkdtemp(join(tmpdir(), 'quicpool-workers-nonative-'));
    const f2 = join(d2, 'quicpool.toml');
    await writeFile(f2, configText([upstream.user]));
    const notAModule = join(d2, 'not-a-module.node');
    await writeFile(notAModule, 'not a native module');
    const d = await startDaemon(['--config', f2, '--state-dir', d2, '--port', '0', '--quic-port', '0', '--set', 'metrics.enabled=false', '--set', 'log.format=json', '--set', 'workers.count=2'], { QUICPOOL_UDP_NATIVE_PATH: notAModule });
    try {
      expect(d.output()).toMatch(/"level":40,.*"workers":1,.*"msg":"one worker instead of 2: sharing the ports between workers needs the native UDP module, which is unavailable/);
      expect(d.output()).toContain('Workers:  1 (in the main thread)');
      const c = new pg.Client({ host: '127.0.0.1', port: d.port('tcp'), user: upstream.user, password: upstream.password, database: DB });
      await c.connect();
      expect((await c.query('select 1 as one')).rows[0].one).toBe(1);
      await c.end();
    } finally {
      expect(await d.stop()).toBe(0);
      await rm(d2, { recursive: true, force: true });
    }
  });
});
