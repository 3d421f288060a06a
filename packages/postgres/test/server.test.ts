// The runtime server against its real binaries: a new cluster reachable over TCP and the unix
// socket with the superuser's password, the same data and password on the next start, TLS when
// given a certificate, temporary clusters removed, a taken port reported.
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { generate } from 'selfsigned';
import { afterAll, describe, expect, it } from 'vitest';
import { startPostgres } from '../src/index.js';
import type { PostgresServer } from '../src/index.js';

const started: PostgresServer[] = [];
const dirs: string[] = [];
afterAll(async () => {
  for (const s of started) await s.stop();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function start(...args: Parameters<typeof startPostgres>): Promise<PostgresServer> {
  const s = await startPostgres(...args);
  started.push(s);
  return s;
}

async function query<T>(config: pg.ClientConfig, sql: string): Promise<T[]> {
  const c = new pg.Client(config);
  await c.connect();
  try {
    return (await c.query(sql)).rows as T[];
  } finally {
    await c.end();
  }
}

describe('PostgresServer', () => {
  it('creates a cluster, keeps it across starts, over TCP and the unix socket', async () => {
    const parent = await mkdtemp(join(tmpdir(), 'quicpool-pg-test-'));
    dirs.push(parent);
    await chmod(parent, 0o711); // as root, Postgres runs as `postgres`, who must pass through
    const dataDir = join(parent, 'data');
    const first = await start({ dataDir, password: 'first-secret' });
    expect(first.created).toBe(true);
    expect(first.info.serverVersion).toMatch(/^\d+\.\d+/);
    const { host, port, user, password, socketDir } = first.info;
    await query({ host, port, user, password, database: 'postgres' }, 'create table kept (x int); insert into kept values (7)');
    const overSocket = await query<{ x: number; via: string | null }>(
      { host: socketDir, port, user, password, database: 'postgres' },
      'select x, inet_client_addr()::text as via from kept',
    );
    expect(overSocket).toEqual([{ x: 7, via: null }]); // null: a unix-socket connection
    await first.stop();
    expect(existsSync(dataDir)).toBe(true); // not a temporary cluster

    const again = await start({ dataDir, password: 'first-secret', port });
    expect(again.created).toBe(false);
    expect(await query({ host, port, user, password, database: 'postgres' }, 'select x from kept')).toEqual([{ x: 7 }]);
    const refused = await query({ host, port, user, password: 'wrong', database: 'postgres' }, 'select 1').catch((e: unknown) => e);
    expect((refused as { code?: string }).code).toBe('28P01');
  });

  it('serves TLS with the given certificate', async () => {
    const cert = await generate([{ name: 'commonName', value: 'localhost' }], { keyType: 'ec', curve: 'P-256', algorithm: 'sha256' });
    const s = await start({ tls: { certPem: cert.cert, keyPem: cert.private } });
    const { host, port, user, password } = s.info;
    const rows = await query<{ ssl: boolean }>(
      { host, port, user, password, database: 'postgres', ssl: { ca: cert.cert, servername: 'localhost' } },
      'select ssl from pg_stat_ssl where pid = pg_backend_pid()',
    );
    expect(rows).toEqual([{ ssl: true }]);
  });

  it('removes a temporary cluster on stop', async () => {
    const s = await startPostgres();
    const dir = s.dataDir;
    expect(existsSync(join(dir, 'PG_VERSION'))).toBe(true);
    await s.stop();
    expect(existsSync(dir)).toBe(false);
  });

  it('reports a port it was told to use and cannot bind', async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const address = blocker.address();
    const port = typeof address === 'object' && address !== null ? address.port : 0;
    try {
      const e = await startPostgres({ port }).catch((x: unknown) => x);
      expect(String(e)).toMatch(/could not bind|Address already in use|could not create any TCP\/IP sockets/i);
    } finally {
      blocker.close();
    }
  });
});
