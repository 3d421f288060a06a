// A load of single-statement queries, recorded query by query (when each began and ended, and how
// it ended), for the restart and failover tests and bench:faults: which queries failed, and were
// they the ones in flight when the server went away? A session that ended with its query (the
// server's FATAL 57P01, a pooler's 08006) connects again and goes on.
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

/** What a query still unanswered when the load was aborted records as its error. */
const UNANSWERED = 'unanswered when the load ended';

/**
 * `clients` loops run `sql` (with the client's number as $1) until `stop()`, each bounded by
 * `maxQueries`; a loop whose session ended connects again with `connect`. `done` resolves with
 * every query's record once all loops have ended and closed their clients; `abort()` ends them
 * at once, recording queries still waiting for an answer as UNANSWERED.
 */
export function queryLoop(
  connect: () => Promise<pg.Client>,
  clients: number,
  sql: string,
  maxQueries = 100_000,
): { stop(): void; abort(): void; done: Promise<QueryRecord[]> } {
  let stopped = false;
  let aborted = false;
  const records: QueryRecord[] = [];
  const open = new Set<pg.Client>();
  const loop = async (i: number): Promise<void> => {
    let c = await connect();
    open.add(c);
    try {
      for (let n = 0; !stopped && n < maxQueries; n++) {
        const began = performance.now();
        try {
          await c.query(sql, [i]);
          records.push({ client: i, began, ended: performance.now(), error: null });
        } catch (e) {
          const code = (e as { code?: unknown }).code;
          const error = aborted ? UNANSWERED : typeof code === 'string' ? code : (e as Error).message;
          records.push({ client: i, began, ended: performance.now(), error });
          if (stopped) break;
          if (typeof code === 'string' && !SESSION_ENDING.test(code)) continue;
          open.delete(c);
          await c.end().catch(() => undefined);
          c = await connect();
          open.add(c);
        }
      }
    } finally {
      open.delete(c);
      await c.end().catch(() => undefined);
    }
  };
  const loops = Array.from({ length: clients }, (_, i) => loop(i));
  return {
    stop: () => void (stopped = true),
    abort: () => {
      stopped = true;
      aborted = true;
      for (const c of open) void c.end().catch(() => undefined);
    },
    done: Promise.all(loops).then(() => records),
  };
}
