// What a pool shows (PoolStats, ServerRow), tells (PoolUpstreamEvent, served), takes
// (ReleaseFacts) and needs (PoolDependencies).
import type { SessionInfo } from '@quicpool/transport';
import type { TransactionStatus } from '@quicpool/wire';
import type { Waiter } from '../backend/link.js';
import type { BackendConnection, BackendLogin } from '../backend/connect.js';
import type { ServerAddress } from '../backend/dial.js';
import type { Clock } from '../runtime/clock.js';
import type { WriteBatcher } from '../runtime/write-batcher.js';
import type { HostChoice } from '../upstream/host-choice.js';
import type { BudgetedPool, ServerBudget } from '../workers/budgets.js';
import type { Pool } from './pool.js';

export interface PoolStats {
  /** PAUSEd: waiters queue, no backend is handed out. */
  readonly paused: boolean;
  readonly idle: number;
  readonly active: number;
  readonly resetting: number;
  readonly connecting: number;
  readonly waiting: number;
  readonly connectsTotal: number;
  readonly closedTotal: number;
  readonly waitTimeoutsTotal: number;
  /** How long the longest waiting client has waited so far (ms; 0 when none waits). */
  readonly maxWaitMs: number;
  /** Backends handed to clients (one per transaction in transaction pooling), and the time they were held (ms). */
  readonly xactCountTotal: number;
  readonly xactTimeMsTotal: number;
  /** Of those handed out, the time clients waited for them (ms; 0 for one served at once). */
  readonly waitTimeMsTotal: number;
  /** Of those transactions, the ones the plain lane carried (driver/plain-lane.md). */
  readonly plainXactCountTotal: number;
  /** Requests (Query, Sync, FunctionCall) answered with ReadyForQuery, since the pool was made. */
  readonly queryCountTotal: number;
  /** Time those requests ran (from the first request of a batch out to the ReadyForQuery that ends it), µs. */
  readonly queryTimeUsTotal: number;
  /** Bytes received from and sent to this pool's clients. */
  readonly receivedBytesTotal: number;
  readonly sentBytesTotal: number;
  /** The server host the pool logs in to ("host:port" or a socket path; '' for a virtual database). */
  readonly serverHost: string;
  /** Logins fail for a reason that passes (restart, failover): clients wait (see upstream/outage.ts). */
  readonly serverDown: boolean;
}

/** What the pool tells about its server (the core adds the pool's database and user). */
export type PoolUpstreamEvent =
  /** A login failed; `passes`: for a reason that passes (clients wait). */
  | { readonly type: 'loginFailed'; readonly server: string; readonly reason: string; readonly message: string; readonly passes: boolean }
  /** The first failed login of an outage. */
  | { readonly type: 'serverDown'; readonly server: string; readonly reason: string; readonly message: string }
  /** Logins succeed again after an outage of `outageMs`. */
  | { readonly type: 'serverUp'; readonly server: string; readonly outageMs: number }
  /** The pool logs in to another host now (target_session_attrs, failover). */
  | { readonly type: 'hostChanged'; readonly from: string; readonly to: string; readonly why: string };

export interface PoolDependencies {
  readonly clock: Clock;
  readonly connect: (login: BackendLogin) => Promise<BackendConnection>;
  /** The pooler's write batcher: every backend's writer collects through it. */
  readonly batcher: WriteBatcher;
  /**
   * A backend came back from `waiter`, which had waited `waitMs` for it and held it `xactMs` (for
   * metrics; positional: nothing allocated per transaction); absent: nobody listens.
   */
  readonly served?: (pool: Pool, waiter: Waiter, waitMs: number, xactMs: number) => void;
  /**
   * The daemon-wide server budget (several workers, or a daemon-wide limit), made for this pool;
   * absent: the pool alone counts its connections against poolSize.
   */
  readonly budget?: (pool: BudgetedPool) => ServerBudget;
  /** The hosts the pool may log in to (absent for a virtual database): the one in use, and whether a server still suits. */
  readonly hosts?: HostChoice;
  /** Longest a client waits for a server that is down (ms; 0: fail at once). Read at each use (RELOAD). */
  readonly outageWaitMs?: () => number;
  readonly upstream?: (pool: Pool, e: PoolUpstreamEvent) => void;
  /** A server connection of this pool reported a new role for `server`: every pool drops its idle ones there. */
  readonly serverRoleChanged?: (server: ServerAddress) => void;
  /** Jitter of the login retries (tests pass a fixed one). */
  readonly random?: () => number;
}

/** Facts about a backend being given back; the pool decides what it needs (rollback, reset, close). */
export interface ReleaseFacts {
  /** Transaction status of its last ReadyForQuery. */
  readonly status: TransactionStatus;
  /** A request is still in flight (its ReadyForQuery has not arrived). */
  readonly busy: boolean;
  /** Session state may have been changed (SET, PREPARE, LISTEN ..., or session pooling). */
  readonly dirty: boolean;
}

/** A server connection as SHOW SERVERS lists it. */
export type ServerState = 'idle' | 'active' | 'resetting';

export interface ServerRow {
  readonly database: string;
  readonly user: string;
  readonly state: ServerState;
  readonly info: SessionInfo;
  /** Wall-clock time the connection was opened (epoch ms). */
  readonly connectedAt: number;
  /** The server's backend process id (BackendKeyData). */
  readonly processId: number;
  /** The server host it is connected to ("host:port" or a socket path). */
  readonly host: string;
  /** The worker that holds it (0 for the only one). */
  readonly worker: number;
}
