// Real Postgres as the reference: random pipelines of Parse/Bind/Describe/Execute/Close/Sync with
// named statements and the unnamed one (errors at Parse and at Execute, duplicate names, Close of
// unknown names, the unnamed statement used in a later Sync group) by two clients are sent to Postgres directly (one connection each) and through the pooler (transaction
// mode, ONE backend shared by both clients, a per-backend cache of 2 statements so that evictions
// happen). Each client must get exactly the answers, in order, that its direct connection got.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FrontendMessage } from '@quicpool/wire';
import { pgInfo, startPooler } from '../support/pooler-helpers.js';
import type { TestPooler } from '../support/pooler-helpers.js';
import { RawClient, summary } from './raw-client.js';

const TEXTS = ['select 1 as a', 'select 2 as b, 3 as c', 'select * from fid_no_such_table', 'select 1 / 0 as boom', 'select 4 as d'];
const named = fc.constantFrom('s1', 's2', 's3', '');
const op: fc.Arbitrary<FrontendMessage> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ type: fc.constant('Parse' as const), name: fc.constantFrom('s1', 's2', 's3', ''), query: fc.constantFrom(...TEXTS), parameterTypes: fc.constant([]) }) },
  { weight: 3, arbitrary: fc.record({ type: fc.constant('Bind' as const), portal: fc.constant(''), statement: named, parameterFormats: fc.constant([]), parameters: fc.constant([]), resultFormats: fc.constant([]) }) },
  { weight: 1, arbitrary: fc.record({ type: fc.constant('Describe' as const), target: fc.constantFrom('S' as const, 'P' as const), name: named }) },
  { weight: 2, arbitrary: fc.record({ type: fc.constant('Execute' as const), portal: fc.constant(''), maxRows: fc.constant(0) }) },
  { weight: 1, arbitrary: fc.record({ type: fc.constant('Close' as const), target: fc.constant('S' as const), name: named }) },
);
/** A pipeline: several Sync-terminated groups sent in one write. */
const pipeline = fc.array(fc.array(op, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 3 });
const step = fc.record({ client: fc.nat(1), groups: pipeline });

let p: TestPooler;
beforeAll(async () => {
  p = await startPooler({ pool: { poolSize: 1, preparedStatementCacheSize: 2 } });
});
afterAll(async () => p.close());

describe('pipelines of named statements: pooler vs direct Postgres', () => {
  it('every client gets the answers its direct connection gets', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), async (steps) => {
        const user = pgInfo.trustUser;
        const pooled = [await RawClient.connect(p.port, user, pgInfo.database), await RawClient.connect(p.port, user, pgInfo.database)];
        const direct = [await RawClient.connect(pgInfo.port, user, pgInfo.database), await RawClient.connect(pgInfo.port, user, pgInfo.database)];
        try {
          for (const s of steps) {
            const messages = s.groups.flatMap((g): FrontendMessage[] => [...g, { type: 'Sync' }]);
            direct[s.client]!.send(messages);
            pooled[s.client]!.send(messages);
            const want = summary(await direct[s.client]!.until(s.groups.length));
            const got = summary(await pooled[s.client]!.until(s.groups.length));
            expect(got).toEqual(want);
          }
        } finally {
          for (const c of [...pooled, ...direct]) c.close();
        }
      }),
      { numRuns: 40 },
    );
  }, 60_000);
});
