// Secrets never reach the logs: the daemon runs at log level debug (JSON lines) while clients log
// in with known passwords, good and bad, over TCP, TLS and QUIC, with SCRAM, md5 and an unknown
// user, and through the admin console (an admin user gets in; a non-admin user with the right
// password is refused with 28000). Then the captured output is searched for every password, the
// configured SCRAM secret and its parts, and the md5 hash.
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type {} from '@quicpool/pg-fixture';
import { forNodePostgres, QuicDialer } from '@quicpool/transport';
import { formatScramSecret, scramSecretFromPassword } from '@quicpool/pooler';
import { startDaemon } from './daemon.js';
import type { Daemon } from './daemon.js';

const upstream = inject('pg');
const scram = scramSecretFromPassword(upstream.password);
const scramText = formatScramSecret(scram);
const md5Hash = `md5${createHash('md5').update(upstream.md5Password + upstream.md5User).digest('hex')}`;
const wrongPasswords = ['Wrong-Guess-8c1e2f', 'Another-Wrong-71aa'];
let dir: string;
let daemon: Daemon;
let port: number;
let quicPort: number;
let ca: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'quicpool-seclogs-'));
  const file = join(dir, 'quicpool.toml');
  await writeFile(
    file,
    `
[upstream]
host = "${upstream.host}"
port = ${upstream.port}
[log]
level = "debug"
format = "json"
[limits]
auth_failure_delay_ms = 50
[admin]
users = ["${upstream.user}"]
[users.${upstream.user}]
scram_secret = "${scramText}"
server_password = "${upstream.password}"
[users.${upstream.md5User}]
password = "${upstream.md5Password}"
auth = "md5"
`,
  );
  daemon = await startDaemon(['--config', file, '--state-dir', dir, '--port', '0', '--quic-port', '0', '--metrics-port', '0']);
  [port, quicPort] = [daemon.port('tcp'), daemon.port('quic')];
  ca = await readFile(join(dir, 'certs', 'ca.pem'), 'utf8');
});

afterAll(async () => {
  if (daemon !== undefined) expect(await daemon.stop()).toBe(0);
  await rm(dir, { recursive: true, force: true });
});

async function login(config: pg.ClientConfig): Promise<string> {
  const c = new pg.Client({ host: '127.0.0.1', port, database: upstream.database, ...config });
  c.on('error', () => undefined);
  try {
    await c.connect();
    await c.query(config.database === 'quicpool' ? 'SHOW CLIENTS' : 'select 1');
    return 'ok';
  } catch (e) {
    return (e as { code?: string }).code ?? 'error';
  } finally {
    await c.end().catch(() => undefined);
  }
}

describe('logs at debug level', () => {
  it('never contain a password, the SCRAM secret or its keys, or the md5 hash', async () => {
    const tls = { ssl: { ca, servername: 'localhost' } };
    const outcomes = {
      scramTcp: await login({ user: upstream.user, password: upstream.password }),
      scramWrong: await login({ user: upstream.user, password: wrongPasswords[0] }),
      unknownUser: await login({ user: 'nobody_here', password: wrongPasswords[1] }),
      md5Tls: await login({ user: upstream.md5User, password: upstream.md5Password, ...tls }),
      md5TlsWrong: await login({ user: upstream.md5User, password: wrongPasswords[0], ...tls }),
      md5PlainTcp: await login({ user: upstream.md5User, password: upstream.md5Password }),
      adminConsole: await login({ user: upstream.user, password: upstream.password, database: 'quicpool' }),
      nonAdminConsole: await login({ user: upstream.md5User, password: upstream.md5Password, database: 'quicpool', ...tls }),
    };
    expect(outcomes).toEqual({
      scramTcp: 'ok',
      scramWrong: '28P01',
      unknownUser: '28P01',
      md5Tls: 'ok',
      md5TlsWrong: '28P01',
      md5PlainTcp: '28000', // md5 over unencrypted TCP is refused by default
      adminConsole: 'ok',
      nonAdminConsole: '28000', // the right password, but not an admin user
    });
    // And over QUIC.
    const d = new QuicDialer({ host: '127.0.0.1', port: quicPort, serverName: 'localhost', ca });
    try {
      const s = await d.open();
      s.on('error', () => undefined);
      const c = new pg.Client({ user: upstream.md5User, password: upstream.md5Password, database: upstream.database, stream: () => forNodePostgres(s) });
      await c.connect();
      expect((await c.query('select 5 as five')).rows).toEqual([{ five: 5 }]);
      await c.end();
    } finally {
      await d.close({ graceful: false });
    }
    await daemon.waitFor(/nobody_here/);
    const out = daemon.output();
    const debugLines = out.split('\n').filter((l) => l.startsWith('{') && (JSON.parse(l) as { level: number }).level === 20);
    expect(debugLines.length).toBeGreaterThan(0); // debug logging was really on
    const secrets = [
      upstream.password,
      upstream.md5Password,
      ...wrongPasswords,
      scramText,
      scram.storedKey.toString('base64'),
      scram.serverKey.toString('base64'),
      scram.salt.toString('base64'),
      md5Hash,
      md5Hash.slice(3),
    ];
    for (const secret of secrets) expect(out.includes(secret), `log output contains ${secret.slice(0, 4)}...`).toBe(false);
  });
});
