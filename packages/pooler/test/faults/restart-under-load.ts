// A load of single-statement queries through the pooler, recorded query by query (when each
// began and ended, and how it ended), for the restart and failover tests: which queries failed,
// and were they the ones in flight when the server went away? A session whose server connection
// died mid-query is closed by the pooler (57P01/08006, as Postgres closes it): its client connects
// again and goes on.
import type pg from 'pg';

export interface QueryRecord {
  readonly client: number;
  /** performance.now() when the query was sent and when its answer (or error) came. */
  readonly began: number;
  readonly ended: number;
  /** The SQLSTATE of a failed query (or the error's message when it has none); null when answered. */
  readonly error: string | null;
}

/** Errors after which the session is gone (the server's FATAL, the pooler's lost connection). */
const SESSION_ENDING = /^(57P0[123]|08...)$/;

/**
 * `clients` loops run `sql` (with the client's number as $1) until `stop()`, each bounded by
 * `maxQueries`; a loop whose session ended connects again with `connect`. Resolves with every
 * query's record once all loops have ended and closed their clients.
 */
export function queryLoop(connect: () => Promise<pg.Client>, clients: number, sql: string, maxQueries = 100_000): { stop(): void; done: Promise<QueryRecord[]> } {
  let stopped = false;
  const records: QueryRecord[] = [];
  const loop = async (i: number): Promise<void> => {
    let c = await connect();
    try {
      for (let n = 0; !stopped && n < maxQueries; n++) {
        const began = performance.now();
        try {
          await c.query(sql, [i]);
          records.push({ client: i, began, ended: performance.now(), error: null });
        } catch (e) {
          const code = (e as { code?: unknown }).code;
          const error = typeof code === 'string' ? code : (e as Error).message;
          records.push({ client: i, began, ended: performance.now(), error });
          if (typeof code === 'string' && !SESSION_ENDING.test(code)) continue;
          await c.end().catch(() => undefined);
          c = await connect();
        }
      }
    } finally {
      await c.end().catch(() => undefined);
    }
  };
  const loops = Array.from({ length: clients }, (_, i) => loop(i));
  return {
    stop: () => void (stopped = true),
    done: Promise.all(loops).then(() => records),
  };
}
