// node-postgres named prepared statements ({ name, text, values }) through the pooler in
// transaction mode: 100 clients over 5 backends, thousands of executions, over TCP and QUIC;
// after the pooler's backends are replaced (pg_terminate_backend); with DEALLOCATE ALL mixed in.
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { untilBackendState } from '@quicpool/pg-fixture';
import { eventually } from '../hostile/helpers.js';
import { testWorkers } from '../support/create-pooler.js';
import { countingServers } from '../support/pooler-helpers.js';
import { directClient, startFidelityPooler } from './helpers.js';
import type { FidelityPooler, Via } from './helpers.js';

let p: FidelityPooler;
beforeAll(async () => {
  p = await startFidelityPooler({ poolSize: 5 });
});
afterAll(async () => p.close());

interface Worker {
  readonly c: pg.Client;
  /** Bumped after DEALLOCATE ALL: pg remembers its statements, so new names are used. */
  generation: number;
}

/** Each worker runs `rounds` executions of two named statements (one in a transaction). */
async function run(workers: Worker[], rounds: number, pids: Set<number>, deallocateEvery = 0): Promise<number> {
  let executions = 0;
  await Promise.all(
    workers.map(async (w, i) => {
      for (let r = 0; r < rounds; r++) {
        const g = w.generation;
        const add = await w.c.query({ name: `add-${g}`, text: 'select $1::int + $2::int as n, pg_backend_pid() as pid', values: [i, r] });
        expect(add.rows[0].n).toBe(i + r);
        pids.add(add.rows[0].pid as number);
        await w.c.query('begin');
        const echo = await w.c.query({ name: `echo-${g}`, text: 'select $1::text as t', values: [`w${i}r${r}`] });
        expect(echo.rows[0].t).toBe(`w${i}r${r}`);
        await w.c.query('commit');
        executions += 2;
        if (deallocateEvery > 0 && (i + r) % deallocateEvery === 0) {
          await w.c.query('DEALLOCATE ALL');
          w.generation++;
        }
      }
    }),
  );
  return executions;
}

async function terminate(pids: Set<number>): Promise<void> {
  const d = await directClient();
  try {
    await d.query('select pg_terminate_backend(pid) from unnest($1::int[]) pid', [[...pids]]);
    for (const pid of pids) await untilBackendState(d, pid, 'gone');
  } finally {
    await d.end();
  }
  // The pool hears of the deaths: none of its server connections is one of them any more.
  await eventually(() => !p.pooler.view().servers.some((s) => pids.has(s.processId)), 5000, 'no terminated server in the pool');
}

describe.each<Via>(['tcp', 'quic'])('named prepared statements in transaction mode over %s', (via) => {
  it('100 clients, 5 backends, thousands of executions, backend replacement, DEALLOCATE ALL', async () => {
    const workers: Worker[] = await Promise.all(Array.from({ length: 100 }, async () => ({ c: await p.pgClient(via), generation: 0 })));
    try {
      // With several workers the budget of 5 moves between them (a move closes a connection and
      // opens another), so more than 5 backends may serve a run, never more than 5 at once.
      const first = new Set<number>();
      const r1 = await countingServers(p.pooler, () => run(workers, 8, first, 7));
      expect(r1.result).toBe(1600);
      expect(r1.most).toBeLessThanOrEqual(5);
      if (testWorkers === 1) expect(first.size).toBeLessThanOrEqual(5);
      await terminate(first);
      const second = new Set<number>();
      const r2 = await countingServers(p.pooler, () => run(workers, 6, second));
      expect(r2.result).toBe(1200);
      for (const pid of second) expect(first.has(pid)).toBe(false);
      expect(r2.most).toBeLessThanOrEqual(5);
      if (testWorkers === 1) expect(second.size).toBeLessThanOrEqual(5);
    } finally {
      await Promise.all(workers.map((w) => w.c.end().catch(() => undefined)));
    }
  }, 60_000);

  it('answers like Postgres: failed Parse, DEALLOCATE name, unnamed statements', async () => {
    const c = await p.pgClient(via);
    try {
      await c.query({ name: 'dup', text: 'select 1 as x' });
      expect((await c.query({ name: 'dup', text: 'select 1 as x' })).rows[0].x).toBe(1);
      // A failing Parse leaves no statement behind.
      const bad = await c.query({ name: 'bad', text: 'select from nowhere_at_all' }).catch((e: { code?: string }) => e);
      expect((bad as { code?: string }).code).toBe('42P01');
      // SQL DEALLOCATE of a protocol-level statement, then PREPARE-free reuse of the name.
      expect((await c.query('DEALLOCATE dup')).command).toBe('DEALLOCATE');
      const gone = await c.query('DEALLOCATE dup').catch((e: { code?: string }) => e);
      expect((gone as { code?: string }).code).toBe('26000');
      // Unnamed statements pass through untouched.
      expect((await c.query('select $1::int * 2 as y', [21])).rows[0].y).toBe(42);
    } finally {
      await c.end();
    }
  }, 20_000);
});
