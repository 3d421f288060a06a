import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { eventually } from '../hostile/helpers.js';
import { ManualClock, turns } from '../support/manual-clock.js';
import { rejection, startPooler } from '../support/pooler-helpers.js';
import type { TestPooler } from '../support/pooler-helpers.js';

async function client(p: TestPooler, errors: Error[]): Promise<pg.Client> {
  const c = new pg.Client(p.clientConfig());
  c.on('error', (e) => errors.push(e));
  await c.connect();
  return c;
}

const codes = (errors: Error[]) => errors.map((e) => (e as { code?: string }).code);

describe('shutdown', () => {
  it('graceful: idle clients get 57P01 at once, a transaction in progress may finish first', async () => {
    // On a manual clock that never moves: the drain's deadline cannot pass, however slow the run.
    const p = await startPooler({}, { clock: new ManualClock() });
    const errorsA: Error[] = [];
    const errorsB: Error[] = [];
    const a = await client(p, errorsA);
    const b = await client(p, errorsB);
    try {
      await a.query('begin');
      const closed = p.pooler.close({ graceful: true, deadlineMs: 5000 });
      await eventually(() => codes(errorsB).includes('57P01'), 5000, 'idle client b closed with 57P01');
      await a.query('select 1'); // the transaction goes on
      await a.query('insert into pg_temp.nothing select 1').catch(() => undefined); // errors: status E, still pinned
      expect(codes(errorsA)).toEqual([]);
      await a.query('rollback'); // still served; the session is closed right after
      await closed;
      expect(codes(errorsA)).toContain('57P01');
      expect(p.pooler.stats().clients).toBe(0);
      expect(p.pooler.stats().pools.every((x) => x.idle + x.active + x.resetting === 0)).toBe(true);
      // no new sessions
      const late = new pg.Client(p.clientConfig());
      expect(await rejection(late.connect())).toBeInstanceOf(Error);
    } finally {
      await a.end().catch(() => undefined);
      await b.end().catch(() => undefined);
    }
  });

  it('graceful with a deadline: a transaction that does not finish is closed with 57P01', async () => {
    // The drain's deadline runs on a manual clock: it passes when the test moves the clock.
    const DEADLINE_MS = 300;
    const clock = new ManualClock();
    const p = await startPooler({}, { clock });
    const errors: Error[] = [];
    const a = await client(p, errors);
    try {
      await a.query('begin');
      let closed = false;
      const closing = p.pooler.close({ graceful: true, deadlineMs: DEADLINE_MS }).then(() => void (closed = true));
      // The drain waits for the transaction, its deadline armed on the pooler's clock ...
      expect(clock.timersDue(clock.now() + DEADLINE_MS)).toBe(1);
      await a.query('select 1'); // the transaction goes on
      // ... still a millisecond before the deadline ...
      clock.advance(DEADLINE_MS - 1);
      await a.query('select 1');
      await turns();
      expect(closed).toBe(false);
      expect(codes(errors)).toEqual([]);
      // ... and not after it: the client is closed with 57P01 and the close completes.
      clock.advance(1);
      await closing;
      await eventually(() => codes(errors).includes('57P01'), 5000, '57P01 received');
    } finally {
      await a.end().catch(() => undefined);
      await p.close(); // not graceful: cuts a drain left waiting by a failed assertion
    }
  });
});
