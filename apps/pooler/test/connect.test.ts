// `quicpool connect` as a user runs it, against `quicpool start` (both the built CLI): local
// clients over its TCP port and its unix socket, its Prometheus metrics, SIGTERM (stop accepting,
// let the open session finish, exit 0, socket file removed), and a second start that resumes the
// QUIC session from the ticket file and sends its first StartupMessage in 0-RTT early data.
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type {} from '@quicpool/pg-fixture';
import { generateDevCertificates } from '@quicpool/transport';
import { runCli, startCommand, startDaemon } from './daemon.js';
import type { Daemon } from './daemon.js';

const upstream = inject('pg');
let dir: string;
let daemon: Daemon;
let quicPort: number;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'quicpool-connect-'));
  const file = join(dir, 'quicpool.toml');
  // The agent's client certificate, mapped by the daemon to trust_user (auth = "cert").
  const agentCert = await generateDevCertificates({ names: ['agent-1'], caName: 'agents CA' });
  await writeFile(join(dir, 'agents-ca.pem'), agentCert.caPem);
  await writeFile(join(dir, 'agent.pem'), agentCert.certPem);
  await writeFile(join(dir, 'agent.key'), agentCert.keyPem);
  await writeFile(file, [
    `[upstream]\nhost = "${upstream.host}"\nport = ${upstream.port}`,
    '[metrics]\nenabled = false',
    `[tls]\nclient_ca_file = "${join(dir, 'agents-ca.pem')}"`,
    `[users.${upstream.user}]\npassword = "${upstream.password}"`,
    `[users.${upstream.trustUser}]\nauth = "cert"\ncert_common_names = ["agent-1"]`,
  ].join('\n') + '\n');
  daemon = await startDaemon(['--config', file, '--state-dir', dir, '--port', '0', '--quic-port', '0']);
  quicPort = daemon.port('quic');
});
afterAll(async () => {
  await daemon?.stop();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

async function startAgent(extra: string[] = []): Promise<{ agent: Daemon; port: number; metrics: () => Promise<string> }> {
  const agent = await startCommand('connect', [
    '--endpoint', `127.0.0.1:${quicPort}`, '--ca-file', join(dir, 'certs', 'ca.pem'), '--server-name', 'localhost',
    '--port', '0', '--socket-dir', dir, '--metrics-port', '0',
    '--set', `connect.ticket_file=${join(dir, 'connect-tickets')}`, '--set', 'log.format=json', ...extra,
  ], /quicpool connect ready/);
  const metrics = async (): Promise<string> => (await fetch(`http://127.0.0.1:${agent.port('metrics')}/metrics`)).text();
  return { agent, port: agent.port('tcp'), metrics };
}

const login = { user: upstream.user, password: upstream.password, database: upstream.database };
const metric = (text: string, name: string): number => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);

describe('quicpool connect', () => {
  it("runs as the start banner's Agent line prints it", async () => {
    const line = /^Agent: +npm run quicpool -- connect (.+?) +# then psql '(postgresql:\/\/[^']+)'$/m.exec(daemon.output());
    expect(line).not.toBeNull();
    const printed = (line?.[1] ?? '').split(/\s+/);
    expect(printed).toEqual(['--endpoint', `127.0.0.1:${quicPort}`, '--server-name', 'localhost', '--ca-file', join(dir, 'certs', 'ca.pem')]);
    expect(line?.[2]).toBe(`postgresql://${upstream.user}@127.0.0.1:6433/postgres`);
    // As printed, but on free ports (6433 may be taken on a test machine) and the run's directory.
    const agent = await startCommand('connect', [...printed, '--port', '0', '--socket-dir', dir, '--metrics-port', '0'], /quicpool connect ready/);
    try {
      const c = new pg.Client({ ...login, host: '127.0.0.1', port: agent.port('tcp') });
      await c.connect();
      expect((await c.query<{ n: number }>('select 6 * 7 as n')).rows[0]?.n).toBe(42);
      await c.end();
    } finally {
      expect(await agent.stop()).toBe(0);
    }
  });

  it('carries local clients over TCP and the unix socket, exports metrics, drains on SIGTERM, and resumes with 0-RTT after a restart', async () => {
    const { agent, port, metrics } = await startAgent();
    const socket = join(dir, `.s.PGSQL.${port}`);
    let held: pg.Client | null = null;
    try {
      for (const host of ['127.0.0.1', dir]) {
        const c = new pg.Client({ ...login, host, port });
        await c.connect();
        expect((await c.query<{ n: number }>('select 6 * 7 as n')).rows[0]?.n).toBe(42);
        await c.end();
      }
      expect(existsSync(socket)).toBe(true);
      const m = await metrics();
      expect(metric(m, 'quicpool_connect_sessions_total')).toBe(2);
      expect(metric(m, 'quicpool_connect_handshakes_total')).toBeGreaterThanOrEqual(1);
      expect(metric(m, 'quicpool_connect_connections')).toBe(1);
      expect(m).toMatch(/^quicpool_connect_bytes_total\{direction="down"\} [1-9]/m);

      // SIGTERM with a transaction open: no new local connection, the open one finishes, exit 0.
      held = new pg.Client({ ...login, host: '127.0.0.1', port });
      held.on('error', () => undefined);
      await held.connect();
      await held.query('begin');
      agent.child.kill('SIGTERM');
      await agent.waitFor(/draining local sessions/);
      const refused = await new pg.Client({ ...login, host: '127.0.0.1', port }).connect().then(() => null, (e: Error & { code?: string }) => e);
      expect(refused?.code).toBe('ECONNREFUSED');
      expect((await held.query<{ n: number }>('select 1 as n')).rows[0]?.n).toBe(1);
      await held.query('commit');
      await held.end();
      held = null;
      expect(await agent.stop()).toBe(0);
      expect(existsSync(socket)).toBe(false);
    } finally {
      await held?.end().catch(() => undefined);
      await agent.stop('SIGKILL');
    }

    // No connection opened at start (min_connections 0): the first local session's StartupMessage
    // rides in the resumed connection's first flight.
    const again = await startAgent(['--set', 'connect.min_connections=0']);
    try {
      const c = new pg.Client({ ...login, host: '127.0.0.1', port: again.port });
      await c.connect();
      await c.query('select 1');
      await c.end();
      const m = await again.metrics();
      expect(metric(m, 'quicpool_connect_resumptions_total')).toBe(1);
      expect(metric(m, 'quicpool_connect_early_startups_total')).toBe(1);
    } finally {
      expect(await again.agent.stop()).toBe(0);
    }
  });

  it('--cert/--key: the daemon maps the agent\'s certificate to a user, local sessions log in without a password', async () => {
    const { agent, port } = await startAgent(['--cert', join(dir, 'agent.pem'), '--key', join(dir, 'agent.key')]);
    try {
      const c = new pg.Client({ host: '127.0.0.1', port, user: upstream.trustUser, database: upstream.database });
      await c.connect();
      expect((await c.query<{ u: string }>('select current_user as u')).rows[0]?.u).toBe(upstream.trustUser);
      await c.end();
    } finally {
      expect(await agent.stop()).toBe(0);
    }
  });

  it('fast start (--cert and a local password list): sessions after the first answered by the agent, /readyz once a connection is open, the login answers kept for the next start', async () => {
    const usersFile = join(dir, 'agent-users.toml');
    const loginFile = join(dir, 'connect-logins');
    await writeFile(usersFile, `[users.${upstream.trustUser}]\npassword = "local-secret"\n`);
    const args = [
      '--cert', join(dir, 'agent.pem'), '--key', join(dir, 'agent.key'),
      '--set', 'connect.tcp_auth=password', '--set', `connect.users_file=${usersFile}`, '--set', `connect.login_cache_file=${loginFile}`,
    ];
    const session = async (port: number): Promise<string | undefined> => {
      const c = new pg.Client({ host: '127.0.0.1', port, user: upstream.trustUser, password: 'local-secret', database: upstream.database });
      await c.connect();
      const u = (await c.query<{ u: string }>('select current_user as u')).rows[0]?.u;
      await c.end();
      return u;
    };
    const readyz = async (a: Daemon): Promise<[number, string]> => {
      const r = await fetch(`http://127.0.0.1:${a.port('metrics')}/readyz`);
      return [r.status, await r.text()];
    };

    const first = await startAgent(args);
    try {
      for (let i = 0; i < 3; i++) expect(await session(first.port)).toBe(upstream.trustUser);
      const m = await first.metrics();
      expect(metric(m, 'quicpool_connect_sessions_total')).toBe(3);
      expect(metric(m, 'quicpool_connect_fast_starts_total')).toBe(2); // the first had nothing cached
      expect(metric(m, 'quicpool_connect_fast_starts_refused_total')).toBe(0);
      expect(await readyz(first.agent)).toEqual([200, 'ready\n']);
      expect((await fetch(`http://127.0.0.1:${first.agent.port('metrics')}/healthz`)).status).toBe(200);
    } finally {
      expect(await first.agent.stop()).toBe(0);
    }
    expect(existsSync(loginFile)).toBe(true);

    // No connection at start: not ready until the first session opens one; that session is
    // fast-started from the file the first run left.
    const again = await startAgent([...args, '--set', 'connect.min_connections=0']);
    try {
      expect(await readyz(again.agent)).toEqual([503, 'not ready: no QUIC connection to a pooler is open\n']);
      expect(await session(again.port)).toBe(upstream.trustUser);
      expect(metric(await again.metrics(), 'quicpool_connect_fast_starts_total')).toBe(1);
      expect((await readyz(again.agent))[0]).toBe(200);
    } finally {
      expect(await again.agent.stop()).toBe(0);
    }
  });

  it('refuses a config without endpoints, naming the key (exit 2)', async () => {
    const r = await runCli(['connect', '--port', '0']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/connect\.endpoints: name at least one pooler/);
  });
});
