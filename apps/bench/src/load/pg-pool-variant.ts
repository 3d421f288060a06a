// The node-postgres variant: N pg.Client sessions behind our own FIFO pool (not pg.Pool, whose
// queue we could not bound or count), so "active" includes the backlog exactly as the original.
import type { ClientConfig } from 'pg';
import type { ConnectionOptions } from 'node:tls';
import { openPgSession } from './pg-session.js';
import { PooledVariant } from './session-pool.js';

export interface PgPoolVariantOptions {
  /** Default "pg". */
  name?: string;
  sessions: number;
  connectionConfig: ClientConfig;
  /** TLS for every session (the original's TCP side required TLS). */
  ssl?: boolean | ConnectionOptions;
  /** Prepare every statement, two round trips per query (the original client's behaviour). */
  prepare?: boolean;
  /** Bound of the wait queue. Default 100 000. */
  maxQueue?: number;
  /** Sessions opened at once by open(). Default 50. */
  connectConcurrency?: number;
}

export function pgPoolVariant(options: PgPoolVariantOptions): PooledVariant {
  const config: ClientConfig = { ...options.connectionConfig };
  if (options.ssl !== undefined) config.ssl = options.ssl;
  const prepare = options.prepare === true;
  return new PooledVariant({
    name: options.name ?? (prepare ? 'pg-prepare' : 'pg'),
    sessions: options.sessions,
    ...(options.maxQueue === undefined ? {} : { maxQueue: options.maxQueue }),
    ...(options.connectConcurrency === undefined ? {} : { connectConcurrency: options.connectConcurrency }),
    connect: () => openPgSession({ config, prepare }),
  });
}
