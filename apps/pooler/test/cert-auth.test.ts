// `quicpool start` with tls.client_ca_file and a user with auth = "cert": @quicpool/client with a
// client certificate logs in without a password over QUIC, and so does pg over TLS after SSLRequest;
// without the certificate both get 28000; a password user on the same daemon is unaffected.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import type {} from '@quicpool/pg-fixture';
import { generateDevCertificates } from '@quicpool/transport';
import type { DevCertificates } from '@quicpool/transport';
import { QuicClient, SessionManager } from '@quicpool/client';
import { startDaemon } from './daemon.js';
import type { Daemon } from './daemon.js';

const upstream = inject('pg');
let dir: string;
let daemon: Daemon;
let port: number;
let quicPort: number;
let ca: string;
let agent: DevCertificates;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'quicpool-certauth-'));
  agent = await generateDevCertificates({ names: ['agent-1'], caName: 'quicpool test client CA' });
  await writeFile(join(dir, 'clients-ca.pem'), agent.caPem);
  const file = join(dir, 'quicpool.toml');
  await writeFile(file, `
[upstream]
host = "${upstream.host}"
port = ${upstream.port}
[tls]
client_ca_file = "${join(dir, 'clients-ca.pem')}"
[quic]
early_data = "read-only"
[users.${upstream.trustUser}]
auth = "cert"
cert_common_names = ["agent-1"]
[users.${upstream.user}]
password = "${upstream.password}"
`);
  daemon = await startDaemon(['--config', file, '--state-dir', dir, '--port', '0', '--quic-port', '0', '--metrics-port', '0']);
  [port, quicPort] = [daemon.port('tcp'), daemon.port('quic')];
  ca = await readFile(join(dir, 'certs', 'ca.pem'), 'utf8');
});

afterAll(async () => {
  if (daemon !== undefined) expect(await daemon.stop()).toBe(0);
  await rm(dir, { recursive: true, force: true });
});

/** One session manager with the agent's certificate, one without (QUIC connections are reused). */
const managers = new Map<boolean, SessionManager>();
afterAll(async () => {
  for (const m of managers.values()) await m.close();
});

async function overQuic(user: string, cert: boolean, password?: string): Promise<string> {
  let manager = managers.get(cert);
  if (manager === undefined) {
    manager = new SessionManager({ endpoints: [`127.0.0.1:${quicPort}`], serverName: 'localhost', ca, ...(cert ? { cert: agent.certPem, key: agent.keyPem } : {}) });
    managers.set(cert, manager);
  }
  const c = new QuicClient({ user, database: upstream.database, ...(password !== undefined ? { password } : {}), sessions: manager });
  c.on('error', () => undefined);
  try {
    await c.connect();
    return (await c.query<{ u: string }>('select current_user as u')).rows[0]!.u;
  } catch (e) {
    return (e as { code?: string }).code ?? 'error';
  } finally {
    // Also after a refused login: ending the client ends its stream (pg leaves it half-open).
    await c.end().catch(() => undefined);
  }
}

async function overTls(user: string, cert: boolean): Promise<string> {
  const c = new pg.Client({
    host: '127.0.0.1', port, database: upstream.database, user,
    ssl: { ca, servername: 'localhost', ...(cert ? { cert: agent.certPem, key: agent.keyPem } : {}) },
  });
  c.on('error', () => undefined);
  try {
    await c.connect();
    return (await c.query<{ u: string }>('select current_user as u')).rows[0]!.u;
  } catch (e) {
    return (e as { code?: string }).code ?? 'error';
  } finally {
    await c.end().catch(() => undefined);
  }
}

it('maps the client certificate to its user over QUIC and TLS; 28000 without it', async () => {
  expect(await overQuic(upstream.trustUser, true)).toBe(upstream.trustUser);
  expect(await overQuic(upstream.trustUser, false)).toBe('28000');
  expect(await overTls(upstream.trustUser, true)).toBe(upstream.trustUser);
  expect(await overTls(upstream.trustUser, false)).toBe('28000');
  expect(await overQuic(upstream.user, true, upstream.password)).toBe(upstream.user); // password users unaffected
});
