// Transaction workers for the fault tests: each worker runs numbered transactions that write a row
// tagged with a transaction-local setting, read the setting back (it must be its own), sleep inside
// the transaction and commit. A failed transaction is recorded and the worker reconnects, so after
// a fault the table must hold exactly the transactions whose COMMIT succeeded.
import pg from 'pg';
import { expect } from 'vitest';
import type { FaultRole } from './helpers.js';
import { sleep } from './helpers.js';

export interface WorkerResult {
  readonly worker: number;
  readonly committed: number[];
  /**
   * Transactions whose COMMIT was sent but whose answer was lost to the fault: Postgres may or may
   * not have committed them (the outcome of a commit in flight is unknown to any client).
   */
  readonly inDoubt: number[];
  readonly errors: { n: number; code: string | undefined; message: string }[];
  /** Values of app.who another session's state leaked into (must stay empty). */
  readonly foreign: string[];
}

export interface WorkerOptions {
  readonly transactions: number;
  /** Client-side pause between INSERT and the next statement: the backend is idle in transaction. */
  readonly idleInTxMs: number;
  /** pg_sleep inside the transaction: the backend is active. */
  readonly sleepS: number;
  /** Pause after a failed transaction before the next attempt (reconnecting). Default 0. */
  readonly retryDelayMs?: number;
  /**
   * Failed transactions that do not count toward `transactions` (the next attempt takes the next
   * number): with enough of them every worker commits `transactions` times, however long the
   * fault lasts. Default 0: every attempt counts.
   */
  readonly retries?: number;
  /** Stop at the first failed transaction (when the way in is gone for good). Default false. */
  readonly stopOnError?: boolean;
  /**
   * Injects a fault into transaction `n`: while the pg_sleep query runs ('query'), or right after
   * the INSERT while the backend is idle in transaction ('idle').
   */
  readonly fault?: { readonly n: number; readonly during: 'query' | 'idle'; readonly inject: (c: pg.Client) => void };
}

/** A connected client; an error it emits while idle (no query to reject) is kept in `idleErrors`. */
async function connect(config: pg.ClientConfig, idleErrors: (Error & { code?: string })[]): Promise<pg.Client> {
  const c = new pg.Client(config);
  c.on('error', (e: Error & { code?: string }) => idleErrors.push(e));
  await c.connect();
  return c;
}

export async function runWorker(worker: number, config: () => pg.ClientConfig | Promise<pg.ClientConfig>, role: FaultRole, o: WorkerOptions): Promise<WorkerResult> {
  const result: WorkerResult = { worker, committed: [], inDoubt: [], errors: [], foreign: [] };
  const me = `w${worker}`;
  let c: pg.Client | null = null;
  const idleErrors: (Error & { code?: string })[] = [];
  for (let n = 0; n < o.transactions + Math.min(result.errors.length, o.retries ?? 0); n++) {
    let committing = false;
    try {
      c ??= await connect(await config(), idleErrors);
      await c.query('begin');
      // SET LOCAL, not set_config(): the pooler pins a backend to a client that calls set_config.
      await c.query(`set local app.who = '${me}'`);
      await c.query(`insert into ${role.table} (worker, n, who) values ($1, $2, current_setting('app.who'))`, [worker, n]);
      const fault = o.fault?.n === n ? o.fault : undefined;
      if (fault?.during === 'idle') fault.inject(c);
      if (o.idleInTxMs > 0) await sleep(o.idleInTxMs);
      const running = c.query<{ who: string }>(`select current_setting('app.who') as who, pg_sleep($1)`, [o.sleepS]);
      if (fault?.during === 'query') {
        const victim = c;
        setTimeout(() => fault.inject(victim), Math.min(50, o.sleepS * 500));
      }
      const r = await running;
      const who = r.rows[0]?.who ?? '';
      if (who !== me) result.foreign.push(who);
      committing = true;
      await c.query('commit');
      result.committed.push(n);
    } catch (e) {
      // The connection's own error (emitted while idle) explains "not queryable" better.
      const err = idleErrors.shift() ?? (e as Error & { code?: string });
      idleErrors.length = 0;
      result.errors.push({ n, code: err.code, message: err.message });
      if (committing) result.inDoubt.push(n);
      await c?.end().catch(() => undefined);
      c = null;
      if (o.stopOnError === true) break;
      if (o.retryDelayMs !== undefined) await sleep(o.retryDelayMs);
    }
  }
  await c?.end().catch(() => undefined);
  return result;
}

/**
 * The table holds exactly the committed transactions (plus, or not, those in doubt), each tagged
 * with its own worker.
 */
export async function expectExactlyCommitted(c: pg.Client, role: FaultRole, results: readonly WorkerResult[]): Promise<void> {
  const rows = (await c.query<{ worker: number; n: number; who: string }>(`select worker, n, who from ${role.table} order by worker, n`)).rows;
  const doubt = new Set(results.flatMap((r) => r.inDoubt.map((n) => `${r.worker}/${n}`)));
  const settled = rows.filter((row) => !doubt.has(`${row.worker}/${row.n}`));
  const expected = results.flatMap((r) => r.committed.map((n) => ({ worker: r.worker, n, who: `w${r.worker}` })));
  expect(settled).toEqual(expected);
  for (const row of rows) expect(row.who).toBe(`w${row.worker}`);
  for (const r of results) expect(r.foreign).toEqual([]);
}
