// Starting a pooler in front of the fixture's Postgres for one test file, and closing it.
import { inject } from 'vitest';
import type {} from '@quicpool/pg-fixture';
import { untilQueryRunning, withPgClient } from '@quicpool/pg-fixture';
import pg from 'pg';
import { listenTcp } from '@quicpool/transport';
import { createPooler } from './create-pooler.js';
import type { Pooler, PoolerConfig, PoolerOptions } from '../../src/index.js';

export const pgInfo = inject('pg');

export interface TestPooler {
  readonly pooler: Pooler;
  readonly port: number;
  /** pg.Client options for this pooler as the fixture superuser (SCRAM). */
  clientConfig(extra?: pg.ClientConfig): pg.ClientConfig;
  close(): Promise<void>;
}

export async function startPooler(overrides: Partial<PoolerConfig> = {}, options: PoolerOptions = {}): Promise<TestPooler> {
  const pooler = createPooler({
    server: { host: pgInfo.host, port: pgInfo.port },
    users: {
      [pgInfo.user]: { password: pgInfo.password },
      [pgInfo.md5User]: { password: pgInfo.md5Password, auth: 'md5' },
      [pgInfo.trustUser]: { auth: 'trust' },
    },
    ...overrides,
  }, options);
  const listener = await listenTcp({ host: '127.0.0.1', port: 0 });
  pooler.listen(listener);
  const port = listener.address().port;
  return {
    pooler,
    port,
    clientConfig: (extra = {}) => ({
      host: '127.0.0.1',
      port,
      database: pgInfo.database,
      user: pgInfo.user,
      password: pgInfo.password,
      ...extra,
    }),
    close: () => pooler.close({ graceful: false }),
  };
}

/** Connects a pg.Client, runs `fn`, always ends the client. */
export { withPgClient as withClient } from '@quicpool/pg-fixture';

/** The error a promise rejects with (fails the test when it resolves). */
export async function rejection(p: Promise<unknown>): Promise<Error & { code?: string }> {
  try {
    await p;
  } catch (e) {
    return e as Error & { code?: string };
  }
  throw new Error('expected a rejection');
}

/** Resolves once `sql` runs on some server process (pg_stat_activity says active): a cancel sent now reaches it. */
export async function untilRunning(sql: string, timeoutMs = 10_000): Promise<void> {
  const direct = { host: pgInfo.host, port: pgInfo.port, user: pgInfo.user, password: pgInfo.password, database: pgInfo.database };
  await withPgClient(direct, (c) => untilQueryRunning(c, sql, { timeoutMs }));
}

/**
 * Resolves once the pooler has seen its last client session end. A test that checks what the
 * next client of a backend inherits waits for this after the previous client vanished: with
 * several workers (the `pooler-workers2` project) a new session goes to the least busy one, so
 * the next client lands on the vanished client's worker, and its backend, once that session is
 * gone (as it always does with one worker).
 */
export async function untilNoClients(pooler: Pooler, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (pooler.view().clients.length > 0) {
    if (Date.now() > deadline) throw new Error(`the pooler still has ${pooler.view().clients.length} client sessions after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** The workers the pooler's client sessions are on now: one backend each when a pool has one server connection. */
export const workersServing = (pooler: Pooler): number => new Set(pooler.view().clients.map((c) => c.worker)).size;

/**
 * Runs `fn` while counting, every few milliseconds, the server processes of `database` and
 * `user` that pg_stat_activity shows and that started since (other poolers' older connections
 * to the same database do not count); resolves with `fn`'s result and the most seen at once.
 */
export async function countingBackends<T>(database: string, user: string, fn: () => Promise<T>): Promise<{ result: T; most: number }> {
  const direct = { host: pgInfo.host, port: pgInfo.port, user: pgInfo.user, password: pgInfo.password, database: pgInfo.database };
  return withPgClient(direct, async (c) => {
    let most = 0;
    let done = false;
    const since = (await c.query('select clock_timestamp() as t')).rows[0].t as Date;
    const sampling = (async () => {
      while (!done) {
        const r = await c.query(
          `select count(*)::int as n from pg_stat_activity
            where datname = $1 and usename = $2 and backend_type = 'client backend' and pid <> pg_backend_pid() and backend_start >= $3`,
          [database, user, since],
        );
        most = Math.max(most, r.rows[0].n as number);
        await new Promise((r2) => setTimeout(r2, 5));
      }
    })();
    try {
      return { result: await fn(), most };
    } finally {
      done = true;
      await sampling;
    }
  });
}

/** Runs `fn` while sampling the pooler's open server connections (all pools); resolves with `fn`'s result and the most at once. */
export async function countingServers<T>(pooler: Pooler, fn: () => Promise<T>): Promise<{ result: T; most: number }> {
  let most = 0;
  const sample = (): void => {
    let n = 0;
    for (const p of pooler.view().pools) if (!p.virtual) n += p.idle + p.active + p.resetting + p.connecting;
    most = Math.max(most, n);
  };
  const timer = setInterval(sample, 2);
  try {
    const result = await fn();
    sample();
    return { result, most };
  } finally {
    clearInterval(timer);
  }
}
