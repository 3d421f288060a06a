// Waiting for server processes to reach a state, as pg_stat_activity reports it. Tests that act on
// a backend (terminate it, cancel its query) must first see it there: a backend that has not yet
// read its query is idle, and a terminate or a cancel then means something else.
import type pg from 'pg';

/** pg_stat_activity's `state`, or 'gone': the process has exited (its last words are sent). */
export type BackendState = 'active' | 'idle' | 'idle in transaction' | 'gone';

export interface BackendStateOptions {
  /** Also require this `wait_event` (e.g. 'PgSleep': inside pg_sleep, not between messages). */
  readonly waitEvent?: string;
  /** Default 10 s. */
  readonly timeoutMs?: number;
}

/**
 * Resolves once server process `pid` is in `state`. `c` is a session of its own (not `pid`'s)
 * with the right to see `pid`'s row. Looks every 10 ms; throws after the timeout.
 */
export function untilBackendState(c: pg.ClientBase, pid: number | string, state: BackendState, options: BackendStateOptions = {}): Promise<void> {
  const sql = 'select count(*)::int as n from pg_stat_activity where pid = $1 and ($2::text is null or state = $2) and ($3::text is null or wait_event = $3)';
  const want = state === 'gone' ? 0 : 1;
  return poll(c, sql, [pid, state === 'gone' ? null : state, options.waitEvent ?? null], (n) => n === want, `server process ${pid} ${state}`, options.timeoutMs);
}

/** Resolves once some server process runs exactly `query` (give it a text of its own: the server is shared). */
export function untilQueryRunning(c: pg.ClientBase, query: string, options: Pick<BackendStateOptions, 'timeoutMs'> = {}): Promise<void> {
  const sql = "select count(*)::int as n from pg_stat_activity where state = 'active' and query = $1";
  return poll(c, sql, [query], (n) => n > 0, `running: ${query}`, options.timeoutMs);
}

async function poll(c: pg.ClientBase, sql: string, values: unknown[], done: (n: number) => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await c.query<{ n: number }>(sql, values);
    if (done(r.rows[0]?.n ?? -1)) return;
    if (Date.now() > deadline) throw new Error(`not ${what} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
