// The soak's steady load: each worker loops over the four ways applications talk to Postgres (simple Query,
// extended protocol, a named prepared statement, a transaction) and checks every answer (md5 checksums; in
// transactions a transaction-local setting that must be the worker's own). Errors are counted, not thrown:
// unexpected unless a fault was just injected. Nothing accumulates per query.
import { createHash, randomBytes } from 'node:crypto';
import type pg from 'pg';
import { SOAK_TABLE } from './stack.js';

export type QueryKind = 'simple' | 'extended' | 'prepared' | 'transaction';
export const QUERY_KINDS: readonly QueryKind[] = ['simple', 'extended', 'prepared', 'transaction'];

export type SoakCounters = ReturnType<typeof newCounters>;

export function newCounters() {
  return {
    queries: 0,
    errors: 0,
    /** Errors while no fault was recent. */
    unexpectedErrors: 0,
    /** Answers whose checksum, row count or session state was wrong. */
    mismatches: 0,
    byKind: { simple: 0, extended: 0, prepared: 0, transaction: 0 } satisfies Record<QueryKind, number>,
    /** The last few unexpected errors (for the report), bounded. */
    lastUnexpected: [] as string[],
  };
}

const md5 = (s: string): string => createHash('md5').update(s).digest('hex');

/** pg.Pool emits a checked-out client's connection error on the client: listen once per client. */
const guarded = new WeakSet<pg.PoolClient>();

async function runOne(pool: pg.Pool, kind: QueryKind, worker: number, n: number): Promise<boolean> {
  switch (kind) {
    case 'simple': {
      const key = `soak:${worker}:${n}`;
      const r = await pool.query<{ n: number; h: string }>(`select ${n}::int as n, md5('${key}') as h`);
      return r.rows.length === 1 && r.rows[0]!.n === n && r.rows[0]!.h === md5(key);
    }
    case 'extended': {
      const payload = randomBytes(16 + (n % 512)).toString('hex');
      const r = await pool.query<{ n: number; h: string; i: number }>(
        'select $1::int as n, md5($2) as h, i from generate_series(1, $3::int) i', [n, payload, 1 + (n % 20)]);
      return r.rows.length === 1 + (n % 20) && r.rows.every((row, k) => row.n === n && row.h === md5(payload) && row.i === k + 1);
    }
    case 'prepared': {
      const payload = `p${worker}-${n}`;
      const r = await pool.query<{ n: number; h: string }>({ name: 'soak_prepared', text: 'select $1::int as n, md5($2) as h', values: [n, payload] });
      return r.rows.length === 1 && r.rows[0]!.n === n && r.rows[0]!.h === md5(payload);
    }
    case 'transaction': {
      const c = await pool.connect();
      if (!guarded.has(c)) {
        guarded.add(c);
        c.on('error', () => undefined);
      }
      const me = `w${worker}`;
      try {
        await c.query('begin');
        await c.query(`set local app.who = '${me}'`);
        await c.query(`insert into ${SOAK_TABLE} (worker, n, who) values ($1, $2, current_setting('app.who'))`, [worker, n]);
        const who = (await c.query<{ who: string }>(`select current_setting('app.who') as who`)).rows[0]?.who;
        await c.query('commit');
        c.release();
        return who === me;
      } catch (e) {
        c.release(e as Error); // broken or mid-transaction: never back into the pool
        throw e;
      }
    }
  }
}

/** One worker's loop until `stopped()`; `faultRecent()` is true shortly after an injected fault, when errors are expected. */
export async function soakWorker(pool: pg.Pool, worker: number, load: { counters: SoakCounters; stopped(): boolean; faultRecent(): boolean }): Promise<void> {
  const { counters, stopped, faultRecent } = load;
  for (let n = 0; !stopped(); n++) {
    const kind = QUERY_KINDS[n % QUERY_KINDS.length]!;
    try {
      const ok = await runOne(pool, kind, worker, n);
      counters.queries++;
      counters.byKind[kind]++;
      if (!ok) counters.mismatches++;
    } catch (e) {
      counters.errors++;
      if (!faultRecent()) {
        counters.unexpectedErrors++;
        const err = e as Error & { code?: string };
        counters.lastUnexpected.push(`${kind}: ${err.code ?? ''} ${err.message}`.slice(0, 200));
        if (counters.lastUnexpected.length > 5) counters.lastUnexpected.shift();
      }
      await new Promise((r) => setTimeout(r, 50)); // let the pool replace the broken session
    }
  }
}
