import { describe, expect, it } from 'vitest';
import { PooledVariant } from './session-pool.js';
import type { Session } from './session-pool.js';
import { QueryRejected } from './variant.js';

/** Sessions whose queries finish only when the test says so. */
function manualSessions(): { connect: () => Promise<Session>; finishNext: () => void; ran: string[] } {
  const pending: Array<() => void> = [];
  const ran: string[] = [];
  return {
    ran,
    finishNext: () => pending.shift()?.(),
    connect: async () => ({
      query: (sql: string) =>
        new Promise<void>((resolve) => {
          ran.push(sql);
          pending.push(resolve);
        }),
      close: async () => undefined,
    }),
  };
}

const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('PooledVariant', () => {
  it('runs waiters in FIFO order as sessions free up', async () => {
    const s = manualSessions();
    const pool = new PooledVariant({ name: 't', sessions: 2, connect: s.connect });
    await pool.open();
    const done: string[] = [];
    for (const q of ['a', 'b', 'c', 'd']) void pool.query(q, Infinity).then(() => done.push(q));
    expect(s.ran).toEqual(['a', 'b']);
    expect(pool.backlog).toBe(2);
    s.finishNext();
    await flush();
    expect(s.ran).toEqual(['a', 'b', 'c']);
    s.finishNext(); // b
    await flush();
    expect(s.ran).toEqual(['a', 'b', 'c', 'd']);
    s.finishNext(); // c
    s.finishNext(); // d
    await flush();
    expect(done).toEqual(['a', 'b', 'c', 'd']);
    await pool.close();
  });

  it('refuses beyond the queue bound and drops expired waiters', async () => {
    const s = manualSessions();
    let now = 0;
    const pool = new PooledVariant({ name: 't', sessions: 1, maxQueue: 2, connect: s.connect, now: () => now });
    await pool.open();
    void pool.query('running', Infinity);
    const expired = pool.query('expired', 10);
    const fine = pool.query('fine', 1000);
    await expect(pool.query('overflow', 1000)).rejects.toEqual(new QueryRejected('queue-full'));
    now = 50;
    s.finishNext();
    await expect(expired).rejects.toEqual(new QueryRejected('timeout'));
    await flush();
    expect(s.ran).toEqual(['running', 'fine']);
    s.finishNext();
    await expect(fine).resolves.toBeUndefined();
    await pool.close();
    await expect(pool.query('late', 1000)).rejects.toEqual(new QueryRejected('closed'));
  });
});
