// The plain lane (src/driver/plain-lane.md) against the session machine: the same clients send the
// same requests, at the same time, through a pooler with the lane and one without (transaction
// pooling, fewer server connections than clients, so requests wait too). Each client must get the
// same answers from both, and the pools must count the same transactions, requests and bytes; the
// lane carried some of the transactions, and none without it.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FrontendMessage } from '@quicpool/wire';
import { pgInfo, startPooler } from '../support/pooler-helpers.js';
import type { TestPooler } from '../support/pooler-helpers.js';
import { startFidelityPooler } from './helpers.js';
import { RawClient, summary } from './raw-client.js';

const q = (query: string): FrontendMessage => ({ type: 'Query', query });

/**
 * Requests, each answered by as many ReadyForQuery as it has Query or Sync messages. None pins its
 * server connection (SET of an untracked parameter, LISTEN ...: the last test), which would leave
 * the other clients waiting for the two there are.
 */
const REQUESTS: readonly (readonly FrontendMessage[])[] = [
  // Plain: the lane's.
  [q('select 1 as a')],
  [q("select 2 as b, repeat('x', 3) as c")],
  [q('select 1 as a; select 2 as b')],
  [q('select pg_sleep(0.002)')],
  [q('commit')], // a WARNING notice, then COMMIT
  // Not plain, each for another reason.
  [q('select 1 / 0 as boom')],
  [q('')],
  [q('begin'), q('select 3 as d'), q('commit')],
  [q('begin'), q('select 1 / 0'), q('rollback')],
  [q("set application_name = 'lane_a'")],
  [q("set application_name = 'lane_b'")],
  [q('reset all')],
  [q("select repeat('y', 200) as big from generate_series(1, 500)")],
  [q("do $$begin raise notice 'n'; end$$")],
  [q('deallocate all')],
  [
    { type: 'Parse', name: '', query: 'select 5 as e', parameterTypes: [] },
    { type: 'Bind', portal: '', statement: '', parameterFormats: [], parameters: [], resultFormats: [] },
    { type: 'Execute', portal: '', maxRows: 0 },
    { type: 'Sync' },
  ],
];
const readies = (r: readonly FrontendMessage[]): number => r.filter((m) => m.type === 'Query' || m.type === 'Sync').length;

const CLIENTS = 3;
/** One round: some clients each send a request, all at once; the round ends when all are answered. */
const round = fc.array(fc.record({ client: fc.nat(CLIENTS - 1), request: fc.nat(REQUESTS.length - 1) }), { minLength: 1, maxLength: CLIENTS });

const config = { pool: { poolMode: 'transaction' as const, poolSize: 2, queryWaitTimeoutMs: 30_000 } };
let lane: TestPooler;
let machine: TestPooler;
beforeAll(async () => {
  lane = await startPooler(config, { plainLane: true });
  machine = await startPooler(config, { plainLane: false });
});
afterAll(async () => {
  await lane.close();
  await machine.close();
});

const totals = (p: TestPooler) => {
  const pools = p.pooler.stats().pools;
  const sum = (f: (x: (typeof pools)[number]) => number): number => pools.reduce((n, x) => n + f(x), 0);
  return {
    xacts: sum((x) => x.xactCountTotal),
    plain: sum((x) => x.plainXactCountTotal),
    queries: sum((x) => x.queryCountTotal),
    received: sum((x) => x.receivedBytesTotal),
    sent: sum((x) => x.sentBytesTotal),
  };
};

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
}

describe('the plain lane', () => {
  it('gives every client the answers the session machine gives, and the same totals', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(round, { minLength: 1, maxLength: 10 }), async (rounds) => {
        const user = pgInfo.trustUser;
        const open = (p: TestPooler) => Promise.all(Array.from({ length: CLIENTS }, () => RawClient.connect(p.port, user, pgInfo.database)));
        const viaLane = await open(lane);
        const viaMachine = await open(machine);
        try {
          for (const r of rounds) {
            // One request per client and round (a client waits for its answers before it sends again).
            const sends = [...new Map(r.map((s) => [s.client, REQUESTS[s.request]!])).entries()];
            for (const [c, request] of sends) {
              viaLane[c]!.send(request);
              viaMachine[c]!.send(request);
            }
            for (const [c, request] of sends) {
              const got = summary(await viaLane[c]!.until(readies(request)));
              const want = summary(await viaMachine[c]!.until(readies(request)));
              expect(got).toEqual(want);
            }
          }
        } finally {
          for (const c of [...viaLane, ...viaMachine]) c.close();
        }
        // Each client's traffic reaches the totals when it ends.
        await until(() => lane.pooler.stats().clients === 0 && machine.pooler.stats().clients === 0);
        const a = totals(lane);
        const b = totals(machine);
        expect({ ...a, plain: 0 }).toEqual({ ...b, plain: 0 });
        expect(b.plain).toBe(0);
      }),
      { numRuns: 25 },
    );
    // Across the runs the lane carried transactions (the plain requests are a third of them).
    expect(totals(lane).plain).toBeGreaterThan(0);
    expect(totals(lane).plain).toBeLessThan(totals(lane).xacts);
  }, 120_000);

  it('carries every transaction of plain requests, waiting ones included', async () => {
    const user = pgInfo.trustUser;
    const clients = await Promise.all(Array.from({ length: 5 }, () => RawClient.connect(lane.port, user, pgInfo.database)));
    // A server connection's first lending to clients with these parameters compares them (the
    // session machine's): one round first, in which both are lent.
    for (const c of clients) c.send([q('select 1 as a')]);
    for (const c of clients) await c.until(1);
    const before = totals(lane);
    try {
      for (let i = 0; i < 20; i++) {
        for (const c of clients) c.send([q('select 1 as a')]);
        for (const c of clients) expect(summary(await c.until(1))).toEqual(['RowDescription:a', 'DataRow:1', 'CommandComplete', 'ReadyForQuery']);
      }
    } finally {
      for (const c of clients) c.close();
    }
    await until(() => lane.pooler.stats().clients === 0);
    const after = totals(lane);
    expect(after.xacts - before.xacts).toBe(100);
    expect(after.plain - before.plain).toBe(100);
    expect(after.queries - before.queries).toBe(100);
  });

  it('carries QUIC session streams as it carries sockets', async () => {
    const f = await startFidelityPooler({ poolMode: 'transaction', poolSize: 2 });
    try {
      const clients = await Promise.all(Array.from({ length: 4 }, async () => RawClient.over(await f.open('quic'), pgInfo.trustUser, pgInfo.database)));
      for (let i = 0; i < 10; i++) {
        for (const c of clients) c.send([q(`select ${i} as a`)]);
        for (const c of clients) expect(summary(await c.until(1))).toEqual(['RowDescription:a', `DataRow:${i}`, 'CommandComplete', 'ReadyForQuery']);
      }
      for (const c of clients) c.close();
      const pools = f.pooler.stats().pools;
      const xacts = pools.reduce((n, p) => n + p.xactCountTotal, 0);
      const plain = pools.reduce((n, p) => n + p.plainXactCountTotal, 0);
      expect(xacts).toBe(40);
      // All but each server connection's first lending (which compares the parameters): with two
      // workers the connections may move between them, each move one more first lending.
      expect(plain).toBeGreaterThan(30);
    } finally {
      await f.close();
    }
  });

  it('is off in a pooler made while the environment says QUICPOOL_PLAIN_LANE=0 (the daemon\'s switch)', async () => {
    process.env['QUICPOOL_PLAIN_LANE'] = '0';
    const off = await startPooler(config).finally(() => delete process.env['QUICPOOL_PLAIN_LANE']);
    try {
      const c = await RawClient.connect(off.port, pgInfo.trustUser, pgInfo.database);
      for (let i = 0; i < 3; i++) {
        c.send([q('select 1 as a')]);
        expect(summary(await c.until(1))).toEqual(['RowDescription:a', 'DataRow:1', 'CommandComplete', 'ReadyForQuery']);
      }
      c.close();
      await until(() => off.pooler.stats().clients === 0);
      expect(totals(off)).toMatchObject({ xacts: 3, queries: 3, plain: 0 });
    } finally {
      await off.close();
    }
  });

  it('leaves a pinned session to the session machine', async () => {
    const before = totals(lane);
    const c = await RawClient.connect(lane.port, pgInfo.trustUser, pgInfo.database);
    try {
      c.send([q('listen lane_channel')]);
      expect(summary(await c.until(1))).toEqual(['CommandComplete', 'ReadyForQuery']);
      for (let i = 0; i < 3; i++) {
        c.send([q('select 1 as a')]);
        expect(summary(await c.until(1))).toEqual(['RowDescription:a', 'DataRow:1', 'CommandComplete', 'ReadyForQuery']);
      }
    } finally {
      c.close();
    }
    await until(() => lane.pooler.stats().clients === 0);
    const after = totals(lane);
    expect(after.queries - before.queries).toBe(4);
    expect(after.xacts - before.xacts).toBe(1); // pinned: one lending, to the end
    expect(after.plain - before.plain).toBe(0);
  });
});
