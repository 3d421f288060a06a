// The admin console through the pooler (database "quicpool", admin users only), RELOAD/SIGHUP
// with valid and invalid files, and the Prometheus endpoint, against the run's real PostgreSQL.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { findPsql, PGBENCH_MISSING } from '@quicpool/pg-fixture';
import { forNodePostgres, generateDevCertificates, QuicDialer } from '@quicpool/transport';
import { startDaemon, testWorkers } from './daemon.js';
import type { Daemon } from './daemon.js';

const upstream = inject('pg');
const psql = findPsql();
let dir: string;
let file: string;
let daemon: Daemon;
let port: number;
let quicPort: number;
let metricsPort: number;

const configText = (poolSize: number, extra = ''): string => `
[upstream]
host = "${upstream.host}"
port = ${upstream.port}
[pool]
size = ${poolSize}
[admin]
users = ["${upstream.user}"]
[users.${upstream.user}]
password = "${upstream.password}"
[users.${upstream.md5User}]
password = "${upstream.md5Password}"
${extra}`;

const connect = async (database: string, user = upstream.user, password = upstream.password): Promise<pg.Client> => {
  const c = new pg.Client({ host: '127.0.0.1', port, user, password, database });
  await c.connect();
  return c;
};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'quicpool-admin-'));
  file = join(dir, 'quicpool.toml');
  await writeFile(file, configText(4));
  daemon = await startDaemon(['--config', file, '--state-dir', dir, '--port', '0', '--quic-port', '0', '--metrics-port', '0']);
  [port, quicPort, metricsPort] = [daemon.port('tcp'), daemon.port('quic'), daemon.port('metrics')];
});

afterAll(async () => {
  if (daemon !== undefined) expect(await daemon.stop()).toBe(0);
  await rm(dir, { recursive: true, force: true });
});

describe('admin console', () => {
  it('answers every SHOW with the documented columns and plausible values', async () => {
    const app = await connect(upstream.database);
    await app.query('BEGIN');
    await app.query('SELECT 1'); // holds a server connection: one active server, one active client
    const admin = await connect('quicpool');
    try {
      const pools = await admin.query('SHOW POOLS');
      expect(pools.fields.map((f) => f.name)).toEqual(['database', 'user', 'cl_active', 'cl_waiting', 'sv_active', 'sv_idle', 'sv_used', 'sv_tested', 'sv_login', 'maxwait', 'maxwait_us', 'pool_mode', 'host', 'server_down']);
      const mine = pools.rows.find((r: Record<string, string>) => r['database'] === upstream.database);
      expect(mine).toMatchObject({ user: upstream.user, cl_active: '1', sv_active: '1', pool_mode: 'transaction', host: `${upstream.host}:${upstream.port}`, server_down: '0' });

      const clients = await admin.query('SHOW CLIENTS');
      expect(clients.fields.map((f) => f.name)).toEqual(['type', 'user', 'database', 'state', 'addr', 'port', 'local_addr', 'local_port', 'connect_time', 'tls', 'transport', 'pinned', 'worker']);
      expect(clients.rows).toContainEqual(expect.objectContaining({ type: 'C', database: upstream.database, state: 'active', addr: '127.0.0.1', local_port: String(port), tls: '', transport: 'tcp' }));
      expect(clients.rows).toContainEqual(expect.objectContaining({ database: 'quicpool', user: upstream.user }));

      const servers = await admin.query('SHOW SERVERS');
      expect(servers.fields.map((f) => f.name)).toEqual(['type', 'user', 'database', 'state', 'addr', 'port', 'local_addr', 'local_port', 'connect_time', 'remote_pid', 'worker', 'host']);
      const active = servers.rows.find((r: Record<string, string>) => r['state'] === 'active');
      expect(active).toMatchObject({ type: 'S', database: upstream.database, port: String(upstream.port), host: `${upstream.host}:${upstream.port}` });
      const { rows: pid } = await app.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      expect(active?.['remote_pid']).toBe(String(pid[0]?.pid));
      await app.query('COMMIT');

      const stats = await admin.query('SHOW STATS');
      expect(stats.fields.map((f) => f.name)).toEqual(['database', 'user', 'total_xact_count', 'total_query_count', 'total_received', 'total_sent', 'total_xact_time', 'total_query_time', 'total_wait_time', 'avg_xact_time', 'avg_query_time', 'avg_wait_time']);
      const s = stats.rows.find((r: Record<string, string>) => r['database'] === upstream.database);
      expect(Number(s?.['total_xact_count'])).toBeGreaterThanOrEqual(1);
      expect(Number(s?.['total_xact_time'])).toBeGreaterThan(0);

      const config = await admin.query('SHOW CONFIG');
      expect(config.fields.map((f) => f.name)).toEqual(['key', 'value', 'default', 'changeable']);
      expect(config.rows).toContainEqual({ key: 'pool.size', value: '4', default: '20', changeable: 'yes' });
      expect(config.rows).toContainEqual({ key: 'listen.port', value: '0', default: '6432', changeable: 'no' });
      expect(JSON.stringify(config.rows)).not.toContain(upstream.password); // secrets never shown
      expect(config.rows).toContainEqual(expect.objectContaining({ key: `users.${upstream.user}.password`, value: '********' }));

      const quic = await admin.query('SHOW QUIC');
      expect(quic.fields.map((f) => f.name)).toEqual(['listener', 'worker', 'connections', 'streams', 'handshakes', 'datagrams_in', 'datagrams_out', 'datagrams_dropped', 'bytes_in', 'bytes_out', 'early_data_sessions', 'avg_rtt_ms', 'max_rtt_ms', 'packets_sent', 'packets_lost', 'handshakes_failed']);
      // One row per worker's QUIC endpoint.
      expect(quic.rows).toEqual(Array.from({ length: testWorkers }, (_, w) => expect.objectContaining({ listener: 'quic', worker: String(w), connections: '0' })));

      await expect(admin.query('SHOW NONSENSE')).rejects.toThrow(/expected POOLS, STATS/);
    } finally {
      await app.end();
      await admin.end();
    }
  });

  // psql sends application_name (and whatever PGOPTIONS holds) at startup; the pooler replays
  // tracked parameters into the console's session, which answers them as a server would.
  describe.each([
    ['its default startup', {}],
    ['application_name and options set', { PGAPPNAME: 'ops $q console', PGOPTIONS: '-c statement_timeout=5000 -c search_path=a,b' }],
  ])('psql with %s', (_, env: Record<string, string>) => {
    const runPsql = (...commands: string[]): Promise<string> => {
      const bin = psql;
      if (bin === null) return Promise.reject(new Error(`psql: ${PGBENCH_MISSING}`));
      return new Promise((resolve, reject) => {
        execFile(
          bin,
          [`postgresql://${upstream.user}@127.0.0.1:${port}/quicpool`, '-X', '-v', 'ON_ERROR_STOP=1', '-At', ...commands.flatMap((c) => ['-c', c])],
          { env: { ...process.env, PGPASSWORD: upstream.password, PGSSLMODE: 'disable', ...env }, timeout: 30_000 },
          (error, stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stdout}\n${stderr}`)) : resolve(stdout)),
        );
      });
    };

    it('runs SHOW POOLS, SHOW HELP, PAUSE and RESUME', async () => {
      const out = await runPsql('SHOW POOLS', 'SHOW HELP', 'PAUSE', 'RESUME', 'SHOW CLIENTS');
      expect(out).toContain(`${upstream.database}|${upstream.user}|`);
      expect(out).toMatch(/^SHOW HELP\|this list$/m);
      expect(out).toContain('PAUSE\nRESUME\n');
      // psql's own session, as the console sees it.
      expect(out).toMatch(new RegExp(`^C\\|${upstream.user}\\|quicpool\\|active\\|`, 'm'));
    });
  });

  it('shows QUIC sessions in SHOW QUIC, SHOW CLIENTS and the metrics', async () => {
    const dialer = new QuicDialer({ host: '127.0.0.1', port: quicPort, serverName: 'localhost', ca: await readFile(join(dir, 'certs', 'ca.pem'), 'utf8') });
    const admin = await connect('quicpool');
    try {
      const opened = performance.now();
      const stream = await dialer.open();
      const q = new pg.Client({ user: upstream.user, password: upstream.password, database: upstream.database, stream: () => forNodePostgres(stream) });
      await q.connect();
      await q.query('SELECT 1');
      const { rows: endpoints } = await admin.query('SHOW QUIC');
      const lifetimeMs = performance.now() - opened;
      // The worker the connection's first DCID steered it to has it; any other has none.
      const row = endpoints.find((r: Record<string, string>) => r['connections'] === '1');
      expect(endpoints.filter((r: Record<string, string>) => r['connections'] !== '0')).toHaveLength(1);
      const quic = { rows: [row] };
      expect(quic.rows[0]).toMatchObject({ listener: 'quic', connections: '1', streams: '1', handshakes: '1' });
      expect(Number(quic.rows[0]?.['datagrams_in'])).toBeGreaterThan(2);
      // One connection, nothing lost. Its smoothed RTT averages samples taken within its life, so
      // it cannot exceed how long the connection has existed (reported in whole ms): that catches
      // a unit error (µs, ns) under any machine load, unlike a fixed bound on a latency.
      expect(Number(quic.rows[0]?.['avg_rtt_ms'])).toBeGreaterThanOrEqual(0);
      expect(Number(quic.rows[0]?.['max_rtt_ms'])).toBeLessThanOrEqual(Math.ceil(lifetimeMs));
      expect(Number(quic.rows[0]?.['packets_sent'])).toBeGreaterThan(2);
      expect(quic.rows[0]?.['packets_lost']).toBe('0');
      const clients = await admin.query('SHOW CLIENTS');
      // QUIC always runs TLS 1.3: the tls column says so, as for a TLS session.
      expect(clients.rows).toContainEqual(expect.objectContaining({ database: upstream.database, transport: 'quic', tls: 'TLSv1.3', addr: '127.0.0.1', state: 'idle' }));
      const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      expect(metrics).toContain(`quicpool_transactions_total{database="${upstream.database}",user="${upstream.user}",transport="quic"} 1`);
      expect(metrics).toContain('quicpool_quic_connections{listener="quic"} 1');
      await q.end();
    } finally {
      await admin.end();
      await dialer.close({ graceful: false });
    }
  });

  it('upgrades TCP clients that ask for TLS, verified against the development CA', async () => {
    const ca = await readFile(join(dir, 'certs', 'ca.pem'), 'utf8');
    const c = new pg.Client({ host: '127.0.0.1', port, user: upstream.user, password: upstream.password, database: upstream.database, ssl: { ca, servername: 'localhost' } });
    await c.connect();
    expect((await c.query('SELECT 3 AS three')).rows).toEqual([{ three: 3 }]);
    const admin = await connect('quicpool');
    try {
      // The SSLRequest-upgraded client shows as TLS in SHOW CLIENTS (PgBouncer's tls column).
      const clients = (await admin.query('SHOW CLIENTS')).rows as Record<string, string>[];
      const localPort = (c as unknown as { connection: { stream: { localPort: number } } }).connection.stream.localPort;
      const mine = clients.filter((r) => r['port'] === String(localPort));
      expect(mine).toEqual([expect.objectContaining({ user: upstream.user, database: upstream.database, tls: 'TLSv1.3', transport: 'tls', addr: '127.0.0.1' })]);
      expect(clients.find((r) => r['database'] === 'quicpool')).toMatchObject({ tls: '', transport: 'tcp' }); // this admin session: plain TCP
    } finally {
      await admin.end();
    }
    await c.end();
    const wrongCa = new pg.Client({ host: '127.0.0.1', port, user: upstream.user, password: upstream.password, database: upstream.database, ssl: { servername: 'localhost' } });
    await expect(wrongCa.connect()).rejects.toThrow(/certificate/);
  });

  it('PAUSE holds new transactions and RESUME releases them', async () => {
    const admin = await connect('quicpool');
    const app = await connect(upstream.database);
    try {
      expect((await admin.query('PAUSE')).command).toBe('PAUSE');
      let done = false;
      const held = app.query('SELECT 42 AS answer').then((r) => ((done = true), r.rows));
      // The query reaches the pooler and waits there (SHOW POOLS counts it), unanswered.
      const waiting = async (): Promise<string | undefined> =>
        ((await admin.query('SHOW POOLS')).rows as Record<string, string>[]).find((r) => r['database'] === upstream.database)?.['cl_waiting'];
      for (let i = 0; i < 200 && (await waiting()) !== '1'; i++) await new Promise((r) => setImmediate(r));
      expect(await waiting()).toBe('1');
      expect(done).toBe(false);
      expect((await admin.query('RESUME')).command).toBe('RESUME');
      expect(await held).toEqual([{ answer: 42 }]);
    } finally {
      await admin.query('RESUME');
      await app.end();
      await admin.end();
    }
  });

  it('refuses users who are not admin users', async () => {
    await expect(connect('quicpool', upstream.md5User, upstream.md5Password)).rejects.toThrow(/not an admin user/);
    const app = await connect(upstream.database, upstream.md5User, upstream.md5Password); // the same user may use real databases
    expect((await app.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    await app.end();
  });

  it('names its config key when it refuses a startup parameter it cannot keep per client', async () => {
    const c = new pg.Client({ host: '127.0.0.1', port, user: upstream.user, password: upstream.password, database: upstream.database, options: '-c work_mem=64MB' });
    c.on('error', () => undefined);
    await expect(c.connect()).rejects.toThrow('unsupported startup parameter: work_mem (in options) (the pooler cannot keep it per client; add it to limits.ignore_startup_parameters to have the pooler ignore it)');
    await c.end().catch(() => undefined);
  });

  it('RELOAD changes pool sizes and users live, without dropping sessions', async () => {
    const admin = await connect('quicpool');
    let a: pg.Client | undefined;
    let b: pg.Client | undefined;
    try {
      await expect(connect(upstream.database, upstream.trustUser, 'new-secret')).rejects.toThrow(/password authentication failed/);
      await writeFile(file, configText(1, `[users.${upstream.trustUser}]\npassword = "new-secret"\n`));
      expect((await admin.query('RELOAD')).command).toBe('RELOAD');
      const added = await connect(upstream.database, upstream.trustUser, 'new-secret');
      expect((await added.query('SELECT current_user AS u')).rows).toEqual([{ u: upstream.trustUser }]);
      await added.end();
      // pool.size is now 1 (a pool of its own, so no idle server connection from before can serve
      // the second client): a second transaction waits for the first.
      a = await connect('template1');
      b = await connect('template1');
      await a.query('BEGIN');
      await a.query('SELECT 1');
      let done = false;
      const second = b.query('SELECT 2 AS two').then((r) => ((done = true), r.rows));
      // The second client waits for the one server connection (the pool says so), unanswered.
      const template1 = async (): Promise<Record<string, string> | undefined> =>
        (await admin.query('SHOW POOLS')).rows.find((r: Record<string, string>) => r['database'] === 'template1');
      await vi.waitFor(async () => expect(await template1()).toMatchObject({ cl_waiting: '1', sv_active: '1' }), { timeout: 5_000, interval: 10 });
      expect(done).toBe(false);
      await a.query('COMMIT');
      expect(await second).toEqual([{ two: 2 }]);
    } finally {
      await writeFile(file, configText(4));
      await admin.query('RELOAD');
      await Promise.all([a?.end(), b?.end(), admin.end()]);
    }
  });

  it('RELOAD applies a valid file live and keeps the old config when the new one is invalid', async () => {
    const admin = await connect('quicpool');
    try {
      await writeFile(file, configText(7));
      expect((await admin.query('RELOAD')).command).toBe('RELOAD');
      expect((await admin.query('SHOW CONFIG')).rows).toContainEqual(expect.objectContaining({ key: 'pool.size', value: '7' }));

      await writeFile(file, configText(9, '[limits]\nmax_client_connections = "lots"\n'));
      await expect(admin.query('RELOAD')).rejects.toThrow(/RELOAD failed, the old configuration stays: .*limits\.max_client_connections: expected a whole number/);
      daemon.child.kill('SIGHUP');
      await daemon.waitFor(/reload failed, the old configuration stays.*limits\.max_client_connections|limits\.max_client_connections.*reload failed, the old configuration stays/);
      expect((await admin.query('SHOW CONFIG')).rows).toContainEqual(expect.objectContaining({ key: 'pool.size', value: '7' }));
      const app = await connect(upstream.database);
      expect((await app.query('SELECT 2 AS two')).rows).toEqual([{ two: 2 }]); // still serving
      await app.end();

      await writeFile(file, configText(7, '[listen]\nhost = "0.0.0.0"\n'));
      daemon.child.kill('SIGHUP');
      await daemon.waitFor(/need a restart and keep their old value: listen\.host/);
    } finally {
      await writeFile(file, configText(7));
      await admin.end();
    }
  });
});

/** Minimal Prometheus text-format parser: `name{labels} value` samples; throws on a malformed line. */
function parseExposition(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('# HELP ') || line.startsWith('# TYPE ')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*\})? (-?[0-9.e+-]+|NaN|\+Inf|-Inf)$/.exec(line);
    if (m === null) throw new Error(`not exposition format: ${line}`);
    samples.set(`${m[1] ?? ''}${m[2] ?? ''}`, Number(m[3]));
  }
  return samples;
}

describe('logs', () => {
  it('are JSON lines with login events and never carry a password', () => {
    const lines = daemon.output().split('\n').filter((l) => l.startsWith('{'));
    const events = lines.map((l) => JSON.parse(l) as { msg: string; level: number; user?: string; database?: string });
    expect(events).toContainEqual(expect.objectContaining({ msg: 'client logged in', level: 30, user: upstream.user, database: upstream.database }));
    // A non-admin user is authenticated first, then refused: a failed login, not a refusal before authentication.
    expect(events).toContainEqual(expect.objectContaining({ msg: 'client login failed', user: upstream.md5User, database: 'quicpool', sqlstate: '28000' }));
    expect(daemon.output()).not.toContain(upstream.password);
    expect(daemon.output()).not.toContain(upstream.md5Password);
  });
});

describe('failed logins', () => {
  type LogLine = { msg: string; level: number; user?: string; database?: string; transport?: string; addr?: string; stage?: string; sqlstate?: string | null; reason?: string };
  const logLines = (): LogLine[] => daemon.output().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as LogLine);

  it('are logged at warn with user, database, client address, transport and reason, never the password', async () => {
    const wrongPassword = 'wrong-Secret-7d1f';
    const ca = await readFile(join(dir, 'certs', 'ca.pem'), 'utf8');
    const overTls = new pg.Client({ host: '127.0.0.1', port, user: upstream.user, password: wrongPassword, database: upstream.database, ssl: { ca, servername: 'localhost' } });
    await expect(overTls.connect()).rejects.toThrow(/password authentication failed/);
    await expect(connect('template1', 'no_such_user', wrongPassword)).rejects.toThrow(/password authentication failed/);
    await daemon.waitFor(/"msg":"client login failed"[^\n]*no_such_user|no_such_user[^\n]*"msg":"client login failed"/);

    const failed = logLines().filter((l) => l.msg === 'client login failed');
    expect(failed).toContainEqual(
      expect.objectContaining({ level: 40, user: upstream.user, database: upstream.database, transport: 'tls', stage: 'authentication', sqlstate: '28P01', reason: `password authentication failed for user "${upstream.user}"` }),
    );
    // The client is told only "password authentication failed"; the log also says why.
    expect(failed).toContainEqual(
      expect.objectContaining({ level: 40, user: 'no_such_user', database: 'template1', transport: 'tcp', sqlstate: '28P01', reason: 'password authentication failed for user "no_such_user" (no such user in the config)' }),
    );
    for (const l of failed) expect(l.addr).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(logLines().filter((l) => l.msg === 'client logged in' && l.user === 'no_such_user')).toEqual([]);
    expect(daemon.output()).not.toContain(wrongPassword);
  });

  it('logs and counts refusals without a login: a protocol violation (08P01), an ALPN mismatch, a rejected certificate', async () => {
    // A startup packet whose length cannot be: FATAL 08P01 before any login.
    const answer = await new Promise<Buffer>((resolve, reject) => {
      const chunks: Buffer[] = [];
      const sock = createConnection({ host: '127.0.0.1', port }, () => sock.write(Buffer.from([0, 0, 0, 3, 0, 0, 0, 0])));
      sock.on('data', (b: Buffer) => chunks.push(b)).on('close', () => resolve(Buffer.concat(chunks))).on('error', reject);
    });
    expect(answer.toString('latin1')).toContain('C08P01');
    const ca = await readFile(join(dir, 'certs', 'ca.pem'), 'utf8');
    const otherCa = (await generateDevCertificates({ names: ['localhost'], caName: 'not the pooler CA' })).caPem;
    for (const o of [{ ca, alpn: ['h3'] }, { ca: otherCa }]) {
      const dialer = new QuicDialer({ host: '127.0.0.1', port: quicPort, serverName: 'localhost', ...o });
      try {
        await expect(dialer.open()).rejects.toThrow();
      } finally {
        await dialer.close().catch(() => undefined);
      }
    }
    await daemon.waitFor(/"msg":"client protocol violation"/);
    // (The message comes last in a JSON log line.)
    await daemon.waitFor(/"reason":"[^"]*unknown CA \(certificate not trusted\)[^\n]*"msg":"handshake failed"/);
    await daemon.waitFor(/"reason":"[^"]*ALPN mismatch[^\n]*"msg":"handshake failed"/);
    const lines = logLines();
    expect(lines).toContainEqual(expect.objectContaining({ msg: 'client protocol violation', level: 40, transport: 'tcp', sqlstate: '08P01' }));
    const handshakes = lines.filter((l) => l.msg === 'handshake failed');
    for (const l of handshakes) expect(l).toMatchObject({ level: 40, transport: 'quic', addr: expect.stringMatching(/^127\.0\.0\.1:\d+$/) });
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(Number(/^quicpool_client_protocol_violations_total\{transport="tcp"\} (\d+)/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(1);
    expect(Number(/^quicpool_quic_handshakes_total\{listener="quic",outcome="failed"\} (\d+)/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(2);
    expect(metrics).toMatch(/^quicpool_quic_handshakes_total\{listener="quic",outcome="completed"\} \d+/m);
    const { rows } = await (async () => {
      const admin = await connect('quicpool');
      try {
        return await admin.query('SHOW QUIC');
      } finally {
        await admin.end();
      }
    })();
    expect(rows.reduce((n: number, r: Record<string, string>) => n + Number(r['handshakes_failed']), 0)).toBeGreaterThanOrEqual(2);
  });

  it('logs a client that hangs up during authentication at info, and a failed server login at warn', async () => {
    // A StartupMessage, the server's SASL request, then the client goes (psql does this before prompting for a password).
    const params = Buffer.from(`user\0${upstream.user}\0database\0abandoned_db\0\0`);
    const startup = Buffer.alloc(8);
    startup.writeInt32BE(8 + params.length, 0);
    startup.writeInt32BE(196608, 4); // protocol 3.0
    const answer = await new Promise<Buffer>((resolve, reject) => {
      const sock = createConnection({ host: '127.0.0.1', port }, () => sock.write(Buffer.concat([startup, params])));
      sock.once('data', (b: Buffer) => {
        sock.destroy();
        resolve(b);
      });
      sock.once('error', reject);
    });
    expect([String.fromCharCode(answer[0] ?? 0), answer.readInt32BE(5)]).toEqual(['R', 10]); // AuthenticationSASL
    await expect(connect('no_such_database')).rejects.toThrow(/does not exist/);
    await daemon.waitFor(/abandoned_db/);
    await daemon.waitFor(/"msg":"client login failed"[^\n]*no_such_database|no_such_database[^\n]*"msg":"client login failed"/);
    expect(logLines()).toContainEqual(
      expect.objectContaining({ msg: 'client login abandoned', level: 30, user: upstream.user, database: 'abandoned_db', transport: 'tcp', stage: 'authentication', sqlstate: null, reason: 'the client closed the connection during authentication' }),
    );
    expect(logLines()).toContainEqual(expect.objectContaining({ msg: 'client login failed', level: 40, user: upstream.user, database: 'no_such_database', stage: 'server login', sqlstate: '3D000' }));
  });
});

describe('metrics endpoint', () => {
  it('serves valid exposition format whose counters move with traffic', async () => {
    const scrape = async (): Promise<Map<string, number>> => {
      const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
      return parseExposition(await res.text());
    };
    const key = `{database="${upstream.database}",user="${upstream.user}",transport="tcp"}`;
    const before = await scrape();
    const app = await connect(upstream.database);
    for (let i = 0; i < 5; i++) await app.query('SELECT 1');
    await expect(connect(upstream.database, upstream.user, 'not-the-password')).rejects.toThrow(/password authentication failed/);
    const during = await scrape();
    await app.end();
    const failures = 'quicpool_client_login_failures_total{stage="authentication",transport="tcp"}';
    expect((during.get(failures) ?? 0) - (before.get(failures) ?? 0)).toBe(1);
    expect((during.get(`quicpool_transactions_total${key}`) ?? 0) - (before.get(`quicpool_transactions_total${key}`) ?? 0)).toBe(5);
    expect(during.get(`quicpool_transaction_duration_seconds_count${key}`)).toBe(during.get(`quicpool_transactions_total${key}`));
    expect(during.get(`quicpool_clients${key}`)).toBe(1);
    expect(during.get('quicpool_clients_accepted_total')).toBeGreaterThan(before.get('quicpool_clients_accepted_total') ?? 0);
    expect(during.get(`quicpool_pool_server_connects_total{database="${upstream.database}",user="${upstream.user}"}`)).toBeGreaterThanOrEqual(1);
    expect(during.has('quicpool_quic_connections{listener="quic"}')).toBe(true);
    expect(during.get('quicpool_process_resident_memory_bytes')).toBeGreaterThan(0);
  });
});

describe('health and the upstream banner', () => {
  it('GET /healthz answers 200 (alive) and /readyz 200 (listening, upstream reachable); other paths 404', async () => {
    const healthz = await fetch(`http://127.0.0.1:${metricsPort}/healthz`);
    expect([healthz.status, await healthz.text()]).toEqual([200, 'ok\n']);
    const readyz = await fetch(`http://127.0.0.1:${metricsPort}/readyz`);
    expect([readyz.status, await readyz.text()]).toEqual([200, 'ready\n']);
    expect((await fetch(`http://127.0.0.1:${metricsPort}/nothing`)).status).toBe(404);
  });

  it('the admin console is no pool: SHOW POOLS and the pool metrics leave it out while an admin session runs', async () => {
    const admin = await connect('quicpool');
    try {
      await admin.query('SHOW STATS');
      const pools = (await admin.query('SHOW POOLS')).rows as Record<string, string>[];
      expect(pools.map((r) => r['database'])).not.toContain('quicpool');
      const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      expect(metrics).not.toMatch(/^quicpool_pool_\w+\{database="quicpool"/m);
    } finally {
      await admin.end();
    }
  });

  it('in upstream mode the banner names the server and prints the URLs (a configured user, no password)', () => {
    const out = daemon.output();
    expect(out).toContain(`Upstream: ${upstream.host}:${upstream.port}`);
    expect(out).toContain(`Connect:  postgresql://${upstream.user}@127.0.0.1:${port}/postgres`);
    expect(out).toContain(`Admin:    psql 'postgresql://${upstream.user}@127.0.0.1:${port}/quicpool' -c 'SHOW POOLS'`);
    expect(out).toMatch(/^QUIC:\s+new QuicPool\(/m);
    expect(out).toMatch(/"msg":"upstream PostgreSQL reachable"/);
  });
});

describe('pinned sessions and the session-state policy', () => {
  it('SHOW CLIENTS pinned and quicpool_clients_pinned say who holds a server connection and why; [databases.NAME] session_state_policy applies after RELOAD', async () => {
    const admin = await connect('quicpool');
    const pinned = await connect(upstream.database);
    try {
      await pinned.query('LISTEN quicpool_admin_test');
      const rows = (await admin.query('SHOW CLIENTS')).rows as Record<string, string>[];
      expect(rows.filter((r) => r['pinned'] !== '')).toEqual([expect.objectContaining({ database: upstream.database, user: upstream.user, pinned: 'LISTEN' })]);
      const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      expect(metrics).toContain(`quicpool_clients_pinned{database="${upstream.database}",user="${upstream.user}",reason="LISTEN"} 1`);

      await writeFile(file, configText(4, '[databases.template1]\nsession_state_policy = "reject"\n'));
      expect((await admin.query('RELOAD')).command).toBe('RELOAD');
      expect((await admin.query('SHOW CONFIG')).rows).toContainEqual({ key: 'databases.template1.session_state_policy', value: 'reject', default: '', changeable: 'yes' });
      expect((await admin.query('SHOW CONFIG')).rows).toContainEqual({ key: 'pool.session_state_policy', value: 'pin', default: 'pin', changeable: 'yes' });
      const rejected = await connect('template1');
      await expect(rejected.query('LISTEN quicpool_admin_test')).rejects.toMatchObject({ code: '0A000' });
      await rejected.end();
    } finally {
      await writeFile(file, configText(4));
      await admin.query('RELOAD');
      await pinned.end();
      await admin.end();
    }
  });
});
