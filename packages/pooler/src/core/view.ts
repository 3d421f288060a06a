// What the pooler core shows to whoever observes it (the admin console, metrics, the daemon's
// logs): an immutable snapshot (`PoolerView`) and events. These types belong to the core; the
// observers import them, and the core imports none of its observers.
import type { SessionInfo, TransportKind } from '@quicpool/transport';
import type { SqlState } from '@quicpool/wire';
import type { PoolMode } from '../config/pool-settings.js';
import type { PoolStats, PoolUpstreamEvent, ServerRow } from '../pool/pool.js';

export type { ServerRow, ServerState } from '../pool/pool.js';
import type { LoginStage } from '../session/types.js';

/** Where a client session is (SHOW CLIENTS `state`). */
export type ClientState =
  /** Startup, authentication, or waiting for the pool's server parameters. */
  | 'login'
  /** No backend, none requested. */
  | 'idle'
  /** Asked for a backend and waits for one (PAUSE, pool exhausted). */
  | 'waiting'
  /** Holds a backend. */
  | 'active';

export interface ClientRow {
  readonly info: SessionInfo;
  /** Wall-clock time of the connection (epoch ms). */
  readonly connectedAt: number;
  readonly database: string;
  readonly user: string;
  readonly state: ClientState;
  /**
   * Transaction pooling: the session-state policy pinned its backend to it, because of this (the
   * first statement that did: 'SET', 'RESET', 'PREPARE', 'LISTEN', 'LOAD', 'DECLARE WITH HOLD',
   * 'CREATE TEMP', or the function: 'set_config', 'advisory_lock', 'dblink_connect'); null when not.
   */
  readonly pinned: string | null;
  /** Named prepared statements the pooler carries for it. */
  readonly preparedStatements: number;
  /** The worker that serves it (0 for the only one). */
  readonly worker: number;
}


export interface PoolRow extends PoolStats {
  readonly database: string;
  readonly user: string;
  readonly poolMode: PoolMode;
  /** Client sessions admitted to this pool. */
  readonly clients: number;
  /** A virtual database served in process (the admin console), not by the server. */
  readonly virtual: boolean;
}

export interface PoolerView {
  readonly paused: boolean;
  readonly clients: readonly ClientRow[];
  readonly pools: readonly PoolRow[];
  readonly servers: readonly ServerRow[];
  readonly clientsAcceptedTotal: number;
  readonly clientsRefusedTotal: number;
  readonly cancelRequestsTotal: number;
  readonly cancelsForwardedTotal: number;
  /** QUIC sessions whose first bytes arrived as 0-RTT early data. */
  readonly earlyDataSessionsTotal: number;
  /** Failed server logins by reason: a SQLSTATE the server sent, or an errno ('ECONNREFUSED', 'ETIMEDOUT', 'NO_TARGET'). */
  readonly serverLoginFailuresTotal: Readonly<Record<string, number>>;
}


/**
 * Connection and login events (the daemon logs logins and failed logins). `info` is the session's
 * transport as it is now: a TCP client upgraded by SSLRequest reports kind 'tls'. `admitted`
 * comes before authentication (the client passed the admission limits); `loggedIn` once the client
 * is authenticated and has its server parameters (Postgres's "connection authorized");
 * `loginFailed` when an admitted client ends before that.
 */
export type ClientEvent =
  | { readonly type: 'connected'; readonly info: SessionInfo }
  | { readonly type: 'admitted'; readonly info: SessionInfo; readonly database: string; readonly user: string }
  | { readonly type: 'refused'; readonly info: SessionInfo; readonly database: string; readonly user: string; readonly sqlstate: SqlState; readonly message: string }
  | { readonly type: 'loggedIn'; readonly info: SessionInfo; readonly database: string; readonly user: string }
  | {
      readonly type: 'loginFailed';
      readonly info: SessionInfo;
      readonly database: string;
      readonly user: string;
      readonly stage: LoginStage;
      /** SQLSTATE of the FATAL error the client got (the server's own for a server login); null when the client went away first. */
      readonly sqlstate: string | null;
      /** Why, for the operator; never a password or secret. */
      readonly reason: string;
    }
  | { readonly type: 'closed'; readonly info: SessionInfo; readonly database: string; readonly user: string; readonly durationMs: number }
  /** The client broke the protocol (FATAL 08P01) outside a login; database and user may be ''. */
  | { readonly type: 'protocolViolation'; readonly info: SessionInfo; readonly database: string; readonly user: string; readonly reason: string }
  /** A connection whose handshake failed (QUIC: ALPN mismatch, a rejected certificate, a timeout); no session began. */
  | { readonly type: 'handshakeFailed'; readonly info: SessionInfo; readonly reason: string };

/** A backend went back to its pool: one transaction in transaction pooling. */
export interface TransactionEvent {
  readonly database: string;
  readonly user: string;
  readonly transport: TransportKind;
  /** Time the client waited for the backend (ms). */
  readonly waitMs: number;
  /** Time the client held it (ms). */
  readonly xactMs: number;
}

/** Listeners of a running pooler (each set may be added to and removed from at any time). */
/** A pool's news about its server: login failures, an outage's start and end, a move to another host. */
export type UpstreamEvent = PoolUpstreamEvent & { readonly database: string; readonly user: string };

export interface PoolerEvents {
  readonly client: Set<(e: ClientEvent) => void>;
  readonly transaction: Set<(e: TransactionEvent) => void>;
  readonly upstream: Set<(e: UpstreamEvent) => void>;
}
