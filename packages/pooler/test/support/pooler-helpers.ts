// Starting a pooler in front of the fixture's Postgres for one test file, and closing it.
import { inject } from 'vitest';
import type {} from '@quicpool/pg-fixture';
import { untilQueryRunning, withPgClient } from '@quicpool/pg-fixture';
import pg from 'pg';
import { listenTcp } from '@quicpool/transport';
import { createPooler } from '../../src/index.js';
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
