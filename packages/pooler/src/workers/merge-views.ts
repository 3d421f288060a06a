// The view of a daemon with several workers: what each worker's pooler shows, added up. Pools of
// the same (database, user) become one row (counts and totals summed, the longest wait kept);
// clients and servers are listed from every worker.
import type { PoolerView, PoolRow } from '../core/view.js';

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
  };
}

const sum = <T>(xs: readonly T[], f: (x: T) => number): number => xs.reduce((n, x) => n + f(x), 0);

function addPools(a: PoolRow, b: PoolRow): PoolRow {
  return {
    database: a.database,
    user: a.user,
    poolMode: a.poolMode,
    virtual: a.virtual,
    paused: a.paused || b.paused,
    clients: a.clients + b.clients,
    idle: a.idle + b.idle,
    active: a.active + b.active,
    resetting: a.resetting + b.resetting,
    connecting: a.connecting + b.connecting,
    waiting: a.waiting + b.waiting,
    connectsTotal: a.connectsTotal + b.connectsTotal,
    closedTotal: a.closedTotal + b.closedTotal,
    waitTimeoutsTotal: a.waitTimeoutsTotal + b.waitTimeoutsTotal,
    maxWaitMs: Math.max(a.maxWaitMs, b.maxWaitMs),
    xactCountTotal: a.xactCountTotal + b.xactCountTotal,
    xactTimeMsTotal: a.xactTimeMsTotal + b.xactTimeMsTotal,
    waitTimeMsTotal: a.waitTimeMsTotal + b.waitTimeMsTotal,
    queryCountTotal: a.queryCountTotal + b.queryCountTotal,
    queryTimeUsTotal: a.queryTimeUsTotal + b.queryTimeUsTotal,
    receivedBytesTotal: a.receivedBytesTotal + b.receivedBytesTotal,
    sentBytesTotal: a.sentBytesTotal + b.sentBytesTotal,
  };
}
