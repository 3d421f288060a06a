// Sessions the pooler ends (a refused login, a terminated server process) must end on the client
// too: the pooler ends its side of the QUIC stream, and node-postgres / postgres.js only learn of
// it from 'close', which a half-open stream never emits unless the client ends its side as a
// net.Socket would (transport's endWithPeer). Otherwise the driver never sees the end and the
// session manager counts the stream in use forever.
import pg from 'pg';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresSocket, QuicClient, QuicPool, SessionManager } from '@quicpool/client';
import { untilBackendState } from '@quicpool/pg-fixture';
import { pgInfo, quicOptions, rejection, scramLogin, startQuicPooler, trustLogin, until } from './helpers.js';
import type { TestPooler } from './helpers.js';

let p: TestPooler;
let admin: pg.Client;

beforeAll(async () => {
  p = await startQuicPooler({ poolSize: 4 });
  admin = new pg.Client({ host: pgInfo.host, port: pgInfo.port, ...scramLogin });
  await admin.connect();
});
afterAll(async () => {
  await admin.end();
  await p.close();
});

/** Waits until the server process `pid` is inside pg_sleep, then terminates it. */
async function terminateWhenBusy(pid: number): Promise<void> {
  await untilBackendState(admin, pid, 'active', { waitEvent: 'PgSleep' });
  await admin.query('select pg_terminate_backend($1)', [pid]);
}

describe('sessions the pooler ends close on the client (QUIC)', () => {
  it('5 refused logins (28P01) through QuicPool free their streams; end() finds none in use', async () => {
    const pool = new QuicPool({ ...scramLogin, password: 'wrong', max: 5, quic: await quicOptions([p.endpoint]) });
    const errors: string[] = [];
    try {
      const refused = await Promise.all(Array.from({ length: 5 }, () => rejection(pool.query('select 1'))));
      for (const e of refused) errors.push(e.code ?? e.message);
      expect(errors).toEqual(['28P01', '28P01', '28P01', '28P01', '28P01']);
      // Each stream closes as soon as the pooler's end arrives, not when the pooler gives up
      // waiting for the client (its close linger) or when the pool is ended.
      await until(() => pool.sessions!.stats().streamsInUse === 0);
      expect(pool.sessions!.stats()).toMatchObject({ streamsInUse: 0, acquired: 5, waiting: 0 });
      await until(() => p.pooler.stats().clients === 0);
    } finally {
      await pool.end();
    }
    // Nothing was left for end() to wait for: the manager closed with no stream in use.
    expect(pool.sessions!.stats().streamsInUse).toBe(0);
  }, 20_000);

  // What a driver reports when its server process is terminated mid-query: through the pooler
  // over QUIC exactly what it reports on a direct connection to Postgres.
  async function pgOutcome(config: pg.ClientConfig | { sessions: SessionManager }): Promise<string[]> {
    const events: string[] = [];
    const c = 'sessions' in config ? new QuicClient({ ...trustLogin, sessions: config.sessions }) : new pg.Client(config);
    c.on('error', (e: Error & { code?: string }) => events.push(`error:${e.code ?? e.message}`));
    const ended = new Promise<void>((resolve) => c.once('end', resolve));
    await c.connect();
    const pid = (await c.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
    // Recorded when it settles, like the events: recorded after terminateWhenBusy() returned, its
    // place in the list would depend on whether admin's answer came first.
    const running = rejection(c.query('select pg_sleep(30)')).then((e) => events.push(`query:${e.code ?? '?'}`));
    await terminateWhenBusy(pid);
    await running;
    await ended;
    events.push('end');
    return events;
  }

  async function postgresJsOutcome(options: postgres.Options<Record<string, postgres.PostgresType>>): Promise<string[]> {
    const sql = postgres({ ...trustLogin, max: 1, onnotice: () => undefined, ...options });
    try {
      const [row] = await sql<Array<{ pid: number }>>`select pg_backend_pid() as pid`;
      const running = rejection(sql`select pg_sleep(30)`);
      await terminateWhenBusy(row!.pid);
      const e = await running;
      return [`query:${e.code ?? e.message}`];
    } finally {
      await sql.end({ timeout: 1 });
    }
  }

  it('a terminated server process (57P01): pg over QUIC sees what it sees from Postgres, and the stream is freed', async () => {
    const direct = await pgOutcome({ host: pgInfo.host, port: pgInfo.port, ...trustLogin });
    expect(direct).toContain('query:57P01');
    const manager = new SessionManager(await quicOptions([p.endpoint]));
    try {
      expect(await pgOutcome({ sessions: manager })).toEqual(direct);
      await until(() => manager.stats().streamsInUse === 0);
    } finally {
      await manager.close();
    }
  }, 20_000);

  it('postgres.js over QUIC: a terminated server process reports as on Postgres and frees the stream', async () => {
    const direct = await postgresJsOutcome({ host: pgInfo.host, port: pgInfo.port });
    const manager = new SessionManager(await quicOptions([p.endpoint]));
    try {
      // postgres.js' types do not declare `socket` (see postgres-js.test.ts).
      const viaQuic = { socket: postgresSocket(manager) } as postgres.Options<Record<string, postgres.PostgresType>>;
      expect(await postgresJsOutcome(viaQuic)).toEqual(direct);
      await until(() => manager.stats().streamsInUse === 0);
    } finally {
      await manager.close();
    }
  }, 20_000);
});
