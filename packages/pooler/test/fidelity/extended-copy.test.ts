// COPY FROM STDIN in the extended protocol with a Sync before the data, as pg8000 sends it:
// Bind, Flush, Execute, Flush, Sync, then (after CopyInResponse) CopyData, CopyDone, Sync.
// Postgres ignores a Sync in copy-in mode, so two Syncs get one ReadyForQuery; the pooler must
// not wait for the second (it did: the session hung at its next statement). Compared with a
// direct connection, in transaction mode over TCP and QUIC and in session mode.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withPgClient } from '@quicpool/pg-fixture';
import type { FrontendMessage } from '@quicpool/wire';
import { pgInfo, startPooler } from '../support/pooler-helpers.js';
import type { TestPooler } from '../support/pooler-helpers.js';
import { startFidelityPooler } from './helpers.js';
import type { FidelityPooler } from './helpers.js';
import { RawClient, summary } from './raw-client.js';

const TABLE = 'fid_extended_copy';
let tx: FidelityPooler;
let session: TestPooler;
const superuser = { host: pgInfo.host, port: pgInfo.port, user: pgInfo.user, password: pgInfo.password, database: pgInfo.database };

beforeAll(async () => {
  await withPgClient(superuser, async (c) => {
    await c.query(`drop table if exists ${TABLE}; create table ${TABLE} (n int); grant all on ${TABLE} to ${pgInfo.trustUser}`);
  });
  tx = await startFidelityPooler({ poolSize: 2, poolMode: 'transaction' });
  session = await startPooler({ pool: { poolMode: 'session' } });
});
afterAll(async () => {
  await tx?.close();
  await session?.close();
  await withPgClient(superuser, (c) => c.query(`drop table if exists ${TABLE}`));
});

/** pg8000's COPY, then a statement after it; every answer in order. */
async function copyThenQuery(c: RawClient, rows: number[]): Promise<string[]> {
  const start: FrontendMessage[] = [
    { type: 'Parse', name: '', query: `copy ${TABLE} from stdin`, parameterTypes: [] },
    { type: 'Bind', portal: '', statement: '', parameterFormats: [], parameters: [], resultFormats: [] },
    { type: 'Flush' },
    { type: 'Execute', portal: '', maxRows: 0 },
    { type: 'Flush' },
    { type: 'Sync' },
  ];
  c.send(start);
  const out = summary(await c.untilMessage('CopyInResponse'));
  c.send([{ type: 'CopyData', data: Buffer.from(rows.map((n) => `${n}\n`).join('')) }, { type: 'CopyDone' }, { type: 'Sync' }]);
  out.push(...summary(await c.until(1)));
  c.send([
    { type: 'Parse', name: '', query: `select count(*) as n from ${TABLE} where n = any($1::int[])`, parameterTypes: [] },
    { type: 'Bind', portal: '', statement: '', parameterFormats: [], parameters: [Buffer.from(`{${rows.join(',')}}`)], resultFormats: [] },
    { type: 'Execute', portal: '', maxRows: 0 },
    { type: 'Sync' },
  ]);
  out.push(...summary(await c.until(1)));
  return out;
}

describe('COPY FROM STDIN with a Sync before its data (pg8000)', () => {
  it('answers as a direct connection does, and the session goes on, in every mode and transport', async () => {
    const direct = await RawClient.connect(pgInfo.port, pgInfo.trustUser, pgInfo.database);
    const pooled = [
      await RawClient.over(await tx.open('tcp'), pgInfo.trustUser, pgInfo.database),
      await RawClient.over(await tx.open('quic'), pgInfo.trustUser, pgInfo.database),
      await RawClient.connect(session.port, pgInfo.trustUser, pgInfo.database),
    ];
    try {
      const want = await copyThenQuery(direct, [1, 2, 3]);
      expect(want).toEqual(['ParseComplete', 'BindComplete', 'CopyInResponse', 'CommandComplete', 'ReadyForQuery', 'ParseComplete', 'BindComplete', 'DataRow:3', 'CommandComplete', 'ReadyForQuery']);
      for (const [i, c] of pooled.entries()) {
        const rows = [10 * (i + 1) + 1, 10 * (i + 1) + 2, 10 * (i + 1) + 3];
        expect(await copyThenQuery(c, rows)).toEqual(want);
        // Twice on the same session: nothing was left owed by the first.
        expect(await copyThenQuery(c, rows.map((n) => n + 100))).toEqual(want);
      }
    } finally {
      for (const c of [direct, ...pooled]) c.close();
    }
  });
});
