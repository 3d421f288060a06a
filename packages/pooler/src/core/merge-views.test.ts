import { describe, expect, it } from 'vitest';
import type { PoolerView, PoolRow } from './view.js';
import { mergeViews } from './merge-views.js';

const pool = (database: string, n: number, extra: Partial<PoolRow> = {}): PoolRow => ({
  database, user: 'u', poolMode: 'transaction', virtual: false, paused: false, clients: n, idle: n, active: n, resetting: n, connecting: n,
  waiting: n, connectsTotal: n, closedTotal: n, waitTimeoutsTotal: n, maxWaitMs: n, xactCountTotal: n, xactTimeMsTotal: n, waitTimeMsTotal: n, plainXactCountTotal: n,
  queryCountTotal: n, queryTimeUsTotal: n, receivedBytesTotal: n, sentBytesTotal: n, serverHost: 'h:5432', serverDown: false, ...extra,
});
const view = (pools: PoolRow[], n: number): PoolerView => ({
  paused: false, clients: [], pools, servers: [], clientsAcceptedTotal: n, clientsRefusedTotal: n, cancelRequestsTotal: n, cancelsForwardedTotal: n, earlyDataSessionsTotal: n, serverLoginFailuresTotal: { ECONNREFUSED: n },
});

describe('mergeViews', () => {
  it('adds up the pools of the same (database, user), keeps the longest wait, and adds the totals', () => {
    const merged = mergeViews([view([pool('a', 1), pool('b', 5)], 1), view([pool('a', 2, { maxWaitMs: 0, paused: true })], 10)]);
    const a = merged.pools.find((p) => p.database === 'a')!;
    expect(a).toMatchObject({ clients: 3, idle: 3, active: 3, xactCountTotal: 3, sentBytesTotal: 3, maxWaitMs: 1, paused: true });
    expect(merged.pools.find((p) => p.database === 'b')).toEqual(pool('b', 5));
    expect(merged).toMatchObject({ clientsAcceptedTotal: 11, cancelRequestsTotal: 11, earlyDataSessionsTotal: 11, paused: false });
  });

  it('returns one view as it is', () => {
    const v = view([pool('a', 1)], 1);
    expect(mergeViews([v])).toBe(v);
  });
});
