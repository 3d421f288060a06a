// The unnamed statement across Syncs in transaction mode: pg8000 (and other drivers) send
// Parse+Sync, then Describe+Sync, then Bind/Execute+Sync on the unnamed statement, and the pooler
// may hand the client another server connection at each Sync. 50 such sessions at once over 5
// server connections, over TCP and over QUIC, each with its own statement text, get their own
// statement's rows every time, as a direct connection does.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FrontendMessage } from '@quicpool/wire';
import { pgInfo } from '../support/pooler-helpers.js';
import { startFidelityPooler } from './helpers.js';
import type { FidelityPooler, Via } from './helpers.js';
import { RawClient, summary } from './raw-client.js';

const SESSIONS = 50;
const ROUNDS = 8;

let p: FidelityPooler;
beforeAll(async () => {
  p = await startFidelityPooler({ poolSize: 5, poolMode: 'transaction' });
});
afterAll(async () => p.close());

/** One statement, as pg8000 runs it: three Sync groups; the answers of each. */
async function threeSyncs(c: RawClient, query: string, value: string): Promise<string[]> {
  const groups: FrontendMessage[][] = [
    [{ type: 'Parse', name: '', query, parameterTypes: [] }],
    [{ type: 'Describe', target: 'S', name: '' }],
    [
      { type: 'Bind', portal: '', statement: '', parameterFormats: [], parameters: [Buffer.from(value)], resultFormats: [] },
      { type: 'Execute', portal: '', maxRows: 0 },
    ],
  ];
  const out: string[] = [];
  for (const g of groups) {
    c.send([...g, { type: 'Sync' }]);
    out.push(...summary(await c.until(1)));
  }
  return out;
}

describe.each(['tcp', 'quic'] as const)('the unnamed statement across Syncs, transaction mode, over %s', (via: Via) => {
  it(`${SESSIONS} sessions over 5 server connections each get their own statement's rows`, async () => {
    const clients = await Promise.all(Array.from({ length: SESSIONS }, async () => RawClient.over(await p.open(via), pgInfo.trustUser, pgInfo.database)));
    try {
      const failures: string[] = [];
      await Promise.all(
        clients.map(async (c, i) => {
          for (let r = 0; r < ROUNDS; r++) {
            const got = await threeSyncs(c, `select $1::int * 1000 + ${i} as s${i}`, String(r));
            const want = ['ParseComplete', 'ReadyForQuery', 'ParameterDescription', `RowDescription:s${i}`, 'ReadyForQuery', 'BindComplete', `DataRow:${r * 1000 + i}`, 'CommandComplete', 'ReadyForQuery'];
            if (JSON.stringify(got) !== JSON.stringify(want)) failures.push(`session ${i} round ${r}: ${got.join(' ')}`);
          }
        }),
      );
      expect(failures).toEqual([]);
    } finally {
      for (const c of clients) c.close();
    }
  });

  it('a client without an unnamed statement never runs another client\'s: 26000, as Postgres answers', async () => {
    const [a, b] = [await RawClient.over(await p.open(via), pgInfo.trustUser, pgInfo.database), await RawClient.over(await p.open(via), pgInfo.trustUser, pgInfo.database)];
    const direct = await RawClient.connect(pgInfo.port, pgInfo.trustUser, pgInfo.database);
    try {
      a.send([{ type: 'Parse', name: '', query: 'select 42 as leaked', parameterTypes: [] }, { type: 'Sync' }]);
      await a.until(1);
      // b has no unnamed statement; the server connection it gets next is a's (the pool lends the
      // most recently released one), which still has a's.
      const use: FrontendMessage[] = [
        { type: 'Bind', portal: '', statement: '', parameterFormats: [], parameters: [], resultFormats: [] },
        { type: 'Execute', portal: '', maxRows: 0 },
        { type: 'Sync' },
      ];
      b.send(use);
      direct.send(use);
      const want = summary(await direct.until(1));
      expect(want).toContain('Error:26000');
      expect(summary(await b.until(1))).toEqual(want);
    } finally {
      for (const c of [a, b, direct]) c.close();
    }
  });
});
