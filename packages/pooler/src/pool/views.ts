// What a pool shows of itself, read from the parts it owns: its numbers (PoolStats: SHOW POOLS,
// SHOW STATS, the metrics) and its server connections (SHOW SERVERS). Read when asked, never on
// the path of a transaction.
import type { Backend } from '../backend/backend.js';
import { describeServer } from '../backend/dial.js';
import type { HostChoice } from '../upstream/host-choice.js';
import type { BackendLists } from './backend-lists.js';
import type { PoolTotals } from './totals.js';
import type { PoolStats, ServerRow } from './types.js';
import type { WaitQueue } from './wait-queue.js';

/** What the pool knows of itself beyond the parts it owns. */
export interface PoolState {
  readonly paused: boolean;
  /** Logins under way. */
  readonly connecting: number;
  readonly serverDown: boolean;
  /** Absent for a virtual database (no server host). */
  readonly hosts: HostChoice | undefined;
  readonly now: number;
}

export function poolStats(lists: BackendLists, waits: WaitQueue, totals: PoolTotals, s: PoolState): PoolStats {
  return {
    paused: s.paused,
    idle: lists.idle.length,
    active: lists.active.size,
    resetting: lists.resetting.size,
    connecting: s.connecting,
    waiting: waits.size,
    connectsTotal: totals.connects,
    closedTotal: lists.closedTotal,
    waitTimeoutsTotal: waits.timeoutsTotal,
    maxWaitMs: waits.maxWaitMs(s.now),
    xactCountTotal: totals.xactCount,
    xactTimeMsTotal: totals.xactTimeMs,
    waitTimeMsTotal: totals.waitTimeMs,
    plainXactCountTotal: totals.plainXactCount,
    queryCountTotal: totals.queryCount,
    queryTimeUsTotal: Math.round(totals.queryTimeUs),
    receivedBytesTotal: totals.receivedBytes,
    sentBytesTotal: totals.sentBytes,
    serverHost: s.hosts === undefined ? '' : describeServer(s.hosts.host),
    serverDown: s.serverDown,
  };
}

/** Every server connection of the pool of `database` and `user`, idle ones first (the core adds the worker). */
export function serverRows(database: string, user: string, lists: BackendLists, hosts: HostChoice | undefined): Omit<ServerRow, 'worker'>[] {
  const row = (b: Backend, state: ServerRow['state']): Omit<ServerRow, 'worker'> => ({
    database, user, state, info: b.stream.info, connectedAt: b.connectedAtWall, processId: b.processId, host: hosts === undefined ? '' : describeServer(b.server),
  });
  return [...lists.idle.map((b) => row(b, 'idle')), ...[...lists.active].map((b) => row(b, 'active')), ...[...lists.resetting].map((b) => row(b, 'resetting'))];
}
