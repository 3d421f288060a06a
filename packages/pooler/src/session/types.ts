// What goes into and comes out of a client session's state machine. The machine does no I/O:
// the driver turns transport and pool happenings into events and carries out the actions.
import type { ServerAddress } from '../backend/dial.js';
import type { ServerSessionState } from '../backend/session-state.js';
import type { EncodedError } from '../runtime/encoded-error.js';
import type { ReleaseFacts } from '../pool/types.js';
import type { RawMessage, SqlState, StartupPacket } from '@quicpool/wire';
import type { PeerCertificate, TransportKind } from '@quicpool/transport';
import type { PoolMode } from '../config/pool-settings.js';
import type { ScramKeys } from '../auth/scram.js';
import type { ResolvedUser } from '../config/pooler-config.js';
import type { PreparedRegistry } from '../prepared/registry.js';

// Defined where they belong (the pool's API, the runtime's error), named here for the session's users.
export type { EncodedError } from '../runtime/encoded-error.js';
export type { ReleaseFacts } from '../pool/types.js';

export type SessionPhase =
  | 'startup' // waiting for the StartupMessage (after optional SSLRequest/GSSENCRequest)
  | 'authenticating'
  | 'connecting' // authenticated, waiting for the pool's server parameters
  | 'idle' // no backend attached
  | 'waiting' // a backend was requested
  | 'attached'
  | 'closed';

/** What the session needs to know about the backend it was given. */
export interface AttachedBackend {
  /** The backend's current reported parameter values (ParameterStatus), kept up to date by the backend. */
  readonly parameters: ReadonlyMap<string, string>;
  /** Bumped whenever a value in `parameters` changes. */
  readonly parametersVersion: number;
  /** What the sessions keep on this server connection: matched parameters, values SET, statements prepared. */
  readonly sessionState: ServerSessionState;
}


export interface CancelKey {
  readonly processId: number;
  readonly secretKey: Buffer;
  /** The server that issued the key (a server connection's key; a client's key has none). */
  readonly server?: ServerAddress;
}

export type SessionEvent =
  | { readonly type: 'startupPacket'; readonly packet: StartupPacket }
  /** A typed frontend message, raw (header included). */
  | { readonly type: 'clientMessage'; readonly message: RawMessage }
  /**
   * The pool's cached server parameters, and the key this session gets; ends startup. `prepared`:
   * the statements the pool knows (transaction pooling answers their Parse without a backend).
   */
  | { readonly type: 'serverParameters'; readonly parameters: ReadonlyMap<string, string>; readonly cancelKey: CancelKey; readonly prepared?: PreparedRegistry }
  | { readonly type: 'backendAttached'; readonly backend: AttachedBackend }
  /** A message from the attached backend, raw. */
  | { readonly type: 'backendMessage'; readonly message: RawMessage }
  /** The attached backend died (the pool has already forgotten it). */
  | { readonly type: 'backendLost'; readonly reason: string }
  /** No backend could be had: `error` is the ErrorResponse to send (the server's own, or the pool's). */
  | { readonly type: 'backendUnavailable'; readonly error: EncodedError }
  | { readonly type: 'protocolError'; readonly message: string }
  | { readonly type: 'timeout'; readonly timer: SessionTimer }
  /** The client's stream ended or was reset. */
  | { readonly type: 'clientClosed' }
  /** The QUIC handshake of a session that began in 0-RTT early data is confirmed (read-only policy). */
  | { readonly type: 'handshakeConfirmed' }
  /** Pooler shutdown: graceful lets a transaction in progress finish first. */
  | { readonly type: 'shutdown'; readonly graceful: boolean };

/**
 * 'authentication' is armed by the driver when the session starts (startup + auth must finish in time);
 * 'authFailure' holds a failed login's 28P01 back for the auth-failure delay.
 */
export type SessionTimer = 'authentication' | 'authFailure' | 'clientIdle' | 'idleInTransaction' | 'query';


/** Where a login that did not complete stopped. */
export type LoginStage =
  /** The client did not prove who it is (wrong password, unknown user, method not allowed, timeout). */
  | 'authentication'
  /** Authenticated, but the pool could not log in to the server (no such database, server down). */
  | 'server login';

/** A refusal the session hands the client as a FATAL error. */
export interface Refusal {
  readonly sqlstate: SqlState;
  readonly message: string;
  /**
   * Given only once the client has authenticated, after the auth-failure delay, like a failed
   * password (a user who may not open an admin console): refusing before would tell anyone which
   * names are admin users. The session holds its admission meanwhile.
   */
  readonly afterAuthentication?: boolean;
}

export type SessionAction =
  | { readonly type: 'sendToClient'; readonly bytes: Buffer }
  /** The login is complete: the client is authenticated and has its server parameters. */
  | { readonly type: 'loggedIn' }
  /**
   * An admitted client's login ended before it completed. `sqlstate` is that of the FATAL error it
   * got (the server's own when the server login failed), null when it went away first; `reason`
   * is for the operator (never a secret).
   */
  | { readonly type: 'loginFailed'; readonly stage: LoginStage; readonly sqlstate: string | null; readonly reason: string }
  /** The session ends with FATAL 08P01 outside a login (which loginFailed reports): what the client sent wrong. */
  | { readonly type: 'protocolViolation'; readonly reason: string }
  | { readonly type: 'sendToBackend'; readonly bytes: Buffer }
  /** The client ended with requests unanswered: Terminate and end the backend's input; it answers, then closes. */
  | { readonly type: 'endBackend' }
  /** 'S' was sent: run the TLS handshake on the client stream; the next packet is a StartupMessage. */
  | { readonly type: 'startTls' }
  /** A CancelRequest arrived (the session then closes). */
  | { readonly type: 'cancel'; readonly processId: number; readonly secretKey: Buffer }
  /**
   * The client is authenticated: obtain the pool's server parameters and a cancel key. After SCRAM,
   * `scramKeys` let the pool log in to the server for a user without a server password.
   */
  | { readonly type: 'authenticated'; readonly database: string; readonly user: string; readonly scramKeys?: ScramKeys }
  | { readonly type: 'requestBackend' }
  /** Forget a pending request (client gone while waiting). */
  | { readonly type: 'withdrawRequest' }
  | { readonly type: 'releaseBackend'; readonly facts: ReleaseFacts }
  /** Arm or disarm a session timer. */
  | { readonly type: 'timer'; readonly timer: SessionTimer; readonly armed: boolean }
  /** End the client stream (after the bytes sent before this action). */
  | { readonly type: 'close' };

/**
 * Transaction pooling, a statement that leaves session state behind (LISTEN, session advisory
 * locks, WITH HOLD cursors, temp tables, SET of untracked settings, SQL PREPARE ...):
 * 'pin' keeps the client's backend attached until the client goes (safe, costs a backend);
 * 'reject' answers it with ERROR 0A000; 'reset' lets it run and resets the backend when released
 * (the client silently loses the state at its next transaction).
 */
export type SessionStatePolicy = 'pin' | 'reject' | 'reset';

/** What the driver tells a new session about the world. */
export interface SessionContext {
  readonly transport: TransportKind;
  /** A certificate is configured: an SSLRequest on plain TCP may be answered 'S'. */
  readonly tlsAvailable: boolean;
  readonly poolMode: PoolMode;
  readonly allowInsecurePasswordAuth: boolean;
  readonly ignoreStartupParameters: ReadonlySet<string>;
  /** What a refusal of a startup parameter calls that list (a config key; default `ignoreStartupParameters`). */
  readonly ignoreStartupParametersKey?: string;
  lookupUser(name: string): ResolvedUser | undefined;
  /** Why `name` is not a user, for the operator's log (default: no such user in the config). */
  describeUnknownUser?(name: string): string;
  /** The verified client certificate of the session's connection (asked at login: after an SSLRequest upgrade too), else null. */
  peerCertificate(): PeerCertificate | null;
  /** Transaction pooling: what a statement that leaves session state does (default 'pin'). */
  readonly sessionStatePolicy?: SessionStatePolicy;
  /** The policy of one database when it has its own (else `sessionStatePolicy`). */
  sessionStatePolicyFor?(database: string): SessionStatePolicy | undefined;
  /** Transaction pooling: named prepared statements kept per backend (LRU; default 1000). */
  readonly preparedStatementCacheSize?: number;
  /** A failed password login is answered after the driver's 'authFailure' timer (default false: at once). */
  readonly authFailureDelay?: boolean;
  /**
   * The session began in 0-RTT early data and the pooler's early-data policy is 'read-only': until
   * the 'handshakeConfirmed' event only single read-only statements run, each inside a READ ONLY
   * transaction the pooler opens; everything else (and everything after it) waits.
   */
  readonly readOnlyEarlyData?: boolean;
  /** Client limits: undefined admits the client to the (database, user) pool; else the error. */
  admit(database: string, user: string): Refusal | undefined;
}
