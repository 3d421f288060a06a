// The view of a daemon with several workers: what each worker's pooler shows, added up. Pools of
// the same (database, user) become one row (counts and totals summed, the longest wait kept);
// clients and servers are listed from every worker.
import type { PoolerView, PoolRow } from './view.js';

export function mergeViews(views: readonly PoolerView[]): PoolerView {
  if (views.length === 1) return views[0]!;
  const pools = new Map<string, PoolRow>();
  for (const v of views) {
    for (const p of v.pools) {
      const key = `${p.database}\0${p.user}`;
      const seen = pools.get(key);
      pools.set(key, seen === undefined ? p : addPools(seen, p));
    }
  }
  return {
    paused: views.some((v) => v.paused),
    clients: views.flatMap((v) => v.clients),
    pools: [...pools.values()],
    servers: views.flatMap((v) => v.servers),
    clientsAcceptedTotal: sum(views, (v) => v.clientsAcceptedTotal),
    clientsRefusedTotal: sum(views, (v) => v.clientsRefusedTotal),
    cancelRequestsTotal: sum(views, (v) => v.cancelRequestsTotal),
    cancelsForwardedTotal: sum(views, (v) => v.cancelsForwardedTotal),
    earlyDataSessionsTotal: sum(views, (v) => v.earlyDataSessionsTotal),
    serverLoginFailuresTotal: addCounts(views.map((v) => v.serverLoginFailuresTotal)),
  };
}

const sum = <T>(xs: readonly T[], f: (x: T) => number): number => xs.reduce((n, x) => n + f(x), 0);

/** The counters and totals of a pool row that add up over workers. */
const SUMMED = [
  'clients', 'idle', 'active', 'resetting', 'connecting', 'waiting', 'connectsTotal', 'closedTotal', 'waitTimeoutsTotal',
  'xactCountTotal', 'xactTimeMsTotal', 'waitTimeMsTotal', 'plainXactCountTotal', 'queryCountTotal', 'queryTimeUsTotal', 'receivedBytesTotal', 'sentBytesTotal',
] as const satisfies readonly (keyof PoolRow)[];

function addPools(a: PoolRow, b: PoolRow): PoolRow {
  const sums = Object.fromEntries(SUMMED.map((k) => [k, a[k] + b[k]])) as Pick<PoolRow, (typeof SUMMED)[number]>;
  return { ...a, ...sums, paused: a.paused || b.paused, maxWaitMs: Math.max(a.maxWaitMs, b.maxWaitMs), serverDown: a.serverDown || b.serverDown };
}

function addCounts(counts: readonly Readonly<Record<string, number>>[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const c of counts) for (const [k, n] of Object.entries(c)) out[k] = (out[k] ?? 0) + n;
  return out;
}
