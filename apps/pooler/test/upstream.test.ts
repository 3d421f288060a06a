// The daemon in front of a PostgreSQL that restarts: upstream.hosts (the first host down at start
// is a warn line, not an error), the pool on the host that answers (SHOW POOLS, SHOW SERVERS, the
// host gauge), a client that waits through the restart, and the outage's start and end in the log
// (one warn line with the reason, one info line with its length) and in the login-failure counter.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, startPostgres, withPgClient } from '@quicpool/pg-fixture';
import type { PostgresServer } from '@quicpool/pg-fixture';
import { startDaemon } from './daemon.js';
import type { Daemon } from './daemon.js';

let server: PostgresServer;
let dir: string;
let daemon: Daemon;
let down: number;

beforeAll(async () => {
  server = await startPostgres();
  dir = await mkdtemp(join(tmpdir(), 'quicpool-upstream-'));
  down = await freePort('127.0.0.1'); // nothing listens there
  const file = join(dir, 'quicpool.toml');
  await writeFile(
    file,
    [
      `[upstream]\nhosts = ["127.0.0.1:${down}", "${server.info.host}:${server.info.port}"]\ntarget_session_attrs = "read-write"`,
      '[log]\nformat = "json"',
      `[admin]\nusers = ["${server.info.user}"]`,
      `[users.${server.info.user}]\npassword = "${server.info.password}"`,
    ].join('\n') + '\n',
  );
  daemon = await startDaemon(['--config', file, '--state-dir', dir, '--port', '0', '--quic-port', '0', '--metrics-port', '0']);
}, 60_000);
afterAll(async () => {
  await daemon?.stop();
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

const config = (database = server.info.database): pg.ClientConfig => ({ host: '127.0.0.1', port: daemon.port('tcp'), database, user: server.info.user, password: server.info.password });
const logLines = (msg: string): Record<string, unknown>[] =>
  daemon
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l['msg'] === msg);

describe('the daemon and its upstream hosts', () => {
  it('starts with one of two hosts down, uses the other, and says which', async () => {
    expect(logLines('upstream PostgreSQL host not reachable now')[0]).toMatchObject({ upstream: `127.0.0.1:${down}` });
    expect(await withPgClient(config(), async (c) => (await c.query('select 1 as one')).rows[0].one)).toBe(1);
    const where = `${server.info.host}:${server.info.port}`;
    const admin = await withPgClient(config('quicpool'), async (c) => ({ pools: (await c.query('SHOW POOLS')).rows, servers: (await c.query('SHOW SERVERS')).rows }));
    expect(admin.pools.find((p: { user: string }) => p.user === server.info.user)).toMatchObject({ host: where });
    expect(admin.servers.every((s: { host: string }) => s.host === where)).toBe(true);
    const metrics = await (await fetch(`http://127.0.0.1:${daemon.port('metrics')}/metrics`)).text();
    expect(metrics).toContain(`quicpool_pool_server_host{database="${server.info.database}",user="${server.info.user}",host="${where}"} 1`);
  });

  it('keeps a client waiting through a restart and logs the outage\'s start and end', async () => {
    await server.shutdown('fast');
    // Begun while the server is down: the pool's connections died with it, a new login is refused.
    const answer = withPgClient(config(), async (c) => (await c.query('select 2 as two')).rows[0].two as number);
    await daemon.waitFor(/server unreachable or refusing logins/, 10_000);
    await server.startAgain();
    expect(await answer).toBe(2);
    await daemon.waitFor(/server logins succeed again/, 10_000);
    const [start] = logLines('server unreachable or refusing logins: clients wait');
    const [end] = logLines('server logins succeed again');
    expect(start).toMatchObject({ level: 40, database: server.info.database, user: server.info.user, reason: 'ECONNREFUSED' });
    expect(end).toMatchObject({ level: 30, database: server.info.database, user: server.info.user });
    expect(end?.['outageMs']).toBeGreaterThan(0);
    const metrics = await (await fetch(`http://127.0.0.1:${daemon.port('metrics')}/metrics`)).text();
    expect(metrics).toMatch(/quicpool_server_login_failures_total\{reason="ECONNREFUSED"\} [1-9]/);
    expect(metrics).toMatch(/quicpool_pool_server_down\{[^}]*\} 0/);
  }, 60_000);
});
