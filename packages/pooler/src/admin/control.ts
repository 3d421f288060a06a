// What an operator (admin console, metrics, reload) needs from a running pooler and that the
// session code does not: PAUSE/RESUME, a virtual admin database routed to an in-process server,
// live settings for reload, and per-client / per-backend facts for SHOW CLIENTS / SHOW SERVERS.
import type { SessionInfo, TransportKind } from '@quicpool/transport';
import { SQLSTATE } from '@quicpool/wire';
import type { Backend } from '../backend/backend.js';
import { connectBackend } from '../backend/connect.js';
import type { BackendConnection, BackendLogin } from '../backend/connect.js';
import { DEFAULT_POOL_SETTINGS } from '../config/pool-settings.js';
import type { PoolSettings } from '../config/pool-settings.js';
import type { ResolvedPoolerConfig } from '../config/pooler-config.js';
import type { Waiter } from '../pool/pool.js';
import type { ClientConnection } from '../driver/client-connection.js';
import { GatedPool } from './gated-pool.js';

/** The admin console's database: its pool logs in to an in-process server instead of Postgres. */
export interface AdminRoute {
  readonly database: string;
  readonly host: string;
  readonly port: number;
  /** Secret the pool logs in with (the console server accepts nothing else). */
  readonly password: string;
  /** Users allowed to open the admin database (they authenticate to the pooler as usual). */
  readonly users: ReadonlySet<string>;
}

export interface TransactionEvent {
  readonly database: string;
  readonly user: string;
  readonly transport: TransportKind | 'unknown';
  /** Time the client waited for a backend (ms). */
  readonly waitMs: number;
  /** Time the client held the backend: one transaction in transaction pooling (ms). */
  readonly xactMs: number;
}

/** Where a login that did not complete stopped. */
export type LoginStage =
  /** The client did not prove who it is (wrong password, unknown user, method not allowed, timeout). */
  | 'authentication'
  /** Authenticated, but the pool could not log in to the server (no such database, server down). */
  | 'server login';

/**
 * Connection and login events (the daemon logs logins and failed logins at info/warn). `info` is
 * the session's transport as it is now: a TCP client upgraded by SSLRequest reports kind 'tls'.
 * `admitted` comes before authentication (the client passed the admission limits); `loggedIn`
 * once the client is authenticated and has its server parameters (Postgres's "connection
 * authorized"); `loginFailed` when an admitted client closes before that.
 */
export type ClientEvent =
  | { readonly type: 'connected'; readonly info: SessionInfo }
  | { readonly type: 'admitted'; readonly info: SessionInfo | undefined; readonly database: string; readonly user: string }
  | { readonly type: 'refused'; readonly info: SessionInfo | undefined; readonly database: string; readonly user: string; readonly sqlstate: string; readonly message: string }
  | { readonly type: 'loggedIn'; readonly info: SessionInfo | undefined; readonly database: string; readonly user: string }
  | {
      readonly type: 'loginFailed';
      readonly info: SessionInfo | undefined;
      readonly database: string;
      readonly user: string;
      readonly stage: LoginStage;
      /** SQLSTATE of the FATAL error the client got; null when the client went away first. */
      readonly sqlstate: string | null;
      /** Why, for the operator; never a password or secret. */
      readonly reason: string;
    }
  | { readonly type: 'closed'; readonly info: SessionInfo | undefined; readonly database: string; readonly user: string; readonly durationMs: number };

export interface PoolCounters {
  xactCount: number;
  xactMsTotal: number;
  waitCount: number;
  waitMsTotal: number;
}

export interface ServerFacts {
  readonly database: string;
  readonly user: string;
  readonly connectedAt: number;
  readonly connection: BackendConnection;
}

export interface ClientFacts {
  readonly info: SessionInfo;
  readonly connectedAt: number;
}

const poolKey = (database: string, user: string): string => `${database}\0${user}`;

interface HeldRecord {
  active: boolean;
  assignedAt: number;
  waitMs: number;
  /** The client holding the backend (its transport is looked up only when someone listens). */
  waiter: Waiter | null;
}

/** Copies every pool setting (the keys of DEFAULT_POOL_SETTINGS) from `from` into `into`. */
function copySettings(into: object, from: PoolSettings): PoolSettings {
  const target = into as Record<keyof PoolSettings, unknown>;
  for (const key of SETTING_KEYS) target[key] = from[key];
  return into as PoolSettings;
}
const SETTING_KEYS = Object.keys(DEFAULT_POOL_SETTINGS) as (keyof PoolSettings)[];

type Counters = PoolCounters & { readonly database: string; readonly user: string };

export class PoolerControl {
  private pausedAll = false;
  private readonly pools = new Set<GatedPool>();
  private readonly clientFacts = new WeakMap<object, ClientFacts>();
  /** One record per backend, created at its first assignment and reused for every later one. */
  private readonly held = new WeakMap<Backend, HeldRecord>();
  readonly servers = new Set<ServerFacts>();
  readonly counters = new Map<string, PoolCounters & { readonly database: string; readonly user: string }>();
  readonly transactionListeners = new Set<(e: TransactionEvent) => void>();
  readonly clientListeners = new Set<(e: ClientEvent) => void>();
  adminRoute: AdminRoute | undefined;

  constructor(
    private readonly config: () => ResolvedPoolerConfig,
    /** The open client sessions (SHOW CLIENTS). */
    readonly clients: () => ReadonlySet<ClientConnection>,
  ) {}

  get paused(): boolean {
    return this.pausedAll;
  }

  /** PAUSE: transactions that have not started wait until resume(); running ones finish. */
  pause(): void {
    this.pausedAll = true;
  }

  resume(): void {
    this.pausedAll = false;
    for (const p of this.pools) p.releaseHeld();
  }

  /** Backends currently lent to clients outside the admin database (PAUSE waits for 0). */
  activeServers(): number {
    let n = 0;
    for (const p of this.pools) if (p.database !== this.adminRoute?.database) n += p.stats().active;
    return n;
  }

  /** QUIC sessions whose first bytes arrived as 0-RTT early data. */
  earlyDataSessions = 0;

  clientAccepted(client: object, info: SessionInfo): void {
    this.clientFacts.set(client, { info, connectedAt: Date.now() });
    if (info.quic?.earlyData === true) this.earlyDataSessions++;
    this.emit({ type: 'connected', info });
  }

  clientAdmitted(client: object, database: string, user: string, refused: { sqlstate: string; message: string } | undefined): void {
    const info = this.clientFacts.get(client)?.info;
    this.emit(refused === undefined ? { type: 'admitted', info, database, user } : { type: 'refused', info, database, user, ...refused });
  }

  /** The client's stream became a TLS stream (SSLRequest answered 'S'): SHOW CLIENTS and logs see it. */
  clientUpgraded(client: object, info: SessionInfo): void {
    const facts = this.clientFacts.get(client);
    if (facts !== undefined) this.clientFacts.set(client, { ...facts, info });
  }

  clientLoggedIn(client: object, database: string, user: string): void {
    if (this.clientListeners.size === 0) return;
    this.emit({ type: 'loggedIn', info: this.clientFacts.get(client)?.info, database, user });
  }

  clientLoginFailed(client: object, failure: { database: string; user: string; stage: LoginStage; sqlstate: string | null; reason: string }): void {
    if (this.clientListeners.size === 0) return;
    this.emit({ type: 'loginFailed', info: this.clientFacts.get(client)?.info, ...failure });
  }

  clientClosed(client: ClientConnection): void {
    const facts = this.clientFacts.get(client);
    const durationMs = facts === undefined ? 0 : Date.now() - facts.connectedAt;
    this.emit({ type: 'closed', info: facts?.info, database: client.session.database, user: client.session.user, durationMs });
  }

  private emit(e: ClientEvent): void {
    for (const l of this.clientListeners) l(e);
  }

  clientFactsOf(client: object): ClientFacts | undefined {
    return this.clientFacts.get(client);
  }

  /** An extra admission rule: the admin database is for admin users only. */
  refusal(database: string, user: string): { sqlstate: string; message: string } | undefined {
    const route = this.adminRoute;
    if (route === undefined || database !== route.database || route.users.has(user)) return undefined;
    return { sqlstate: SQLSTATE.INVALID_AUTHORIZATION_SPECIFICATION, message: `user "${user}" is not an admin user of the "${database}" console` };
  }

  createPool(database: string, user: string): GatedPool {
    const cfg = this.config;
    const route = this.adminRoute !== undefined && database === this.adminRoute.database ? this.adminRoute : undefined;
    // Getters: a reload (new config) reaches existing pools without rebuilding them.
    const login: BackendLogin = {
      database,
      user,
      get host() {
        return route?.host ?? cfg().server.host;
      },
      get port() {
        return route?.port ?? cfg().server.port;
      },
      get password() {
        return route?.password ?? cfg().users.get(user)?.serverPassword;
      },
      get connectTimeoutMs() {
        return cfg().server.connectTimeoutMs;
      },
    };
    // A plain data object (read several times per transaction), refreshed in place by configChanged()
    // when a reload replaces the config; formerly one getter per key, each calling cfg() per read.
    const settings = copySettings({}, cfg().pool);
    const servers = this.servers;
    const deps = {
      now: () => Date.now(),
      connect: async (l: BackendLogin): Promise<BackendConnection> => {
        const connection = await connectBackend(l);
        const facts: ServerFacts = { database, user, connectedAt: Date.now(), connection };
        servers.add(facts);
        connection.socket.once('close', () => servers.delete(facts));
        return connection;
      },
    };
    // The pool's counters, found once (on its first transaction, as before) instead of by a rebuilt key per call.
    let counters: Counters | undefined;
    const countersOfPool = (): Counters => (counters ??= this.countersOf(database, user));
    const pool = new GatedPool(database, user, settings, login, deps, {
      isPaused: (db) => this.pausedAll && db !== this.adminRoute?.database,
      assigned: (_p, w, b, waitMs) => this.assigned(countersOfPool(), w, b, waitMs),
      released: (p, b) => this.released(p, countersOfPool(), b),
    });
    this.pools.add(pool);
    return pool;
  }

  /** The config was replaced (reload): existing pools see the new pool settings from now on. */
  configChanged(): void {
    const next = this.config().pool;
    for (const p of this.pools) copySettings(p.settings, next);
  }

  poolClosed(pool: object): void {
    for (const p of this.pools) if (p === pool) this.pools.delete(p);
  }

  private countersOf(database: string, user: string): Counters {
    const key = poolKey(database, user);
    let c = this.counters.get(key);
    if (c === undefined) {
      c = { database, user, xactCount: 0, xactMsTotal: 0, waitCount: 0, waitMsTotal: 0 };
      this.counters.set(key, c);
    }
    return c;
  }

  private assigned(c: PoolCounters, waiter: Waiter, b: Backend, waitMs: number): void {
    c.waitCount++;
    c.waitMsTotal += waitMs;
    const assignedAt = performance.now();
    const h = this.held.get(b);
    if (h === undefined) {
      this.held.set(b, { active: true, assignedAt, waitMs, waiter });
      return;
    }
    h.active = true;
    h.assignedAt = assignedAt;
    h.waitMs = waitMs;
    h.waiter = waiter;
  }

  private released(pool: GatedPool, c: PoolCounters, b: Backend): void {
    const h = this.held.get(b);
    if (h === undefined || !h.active) return;
    h.active = false;
    const waiter = h.waiter;
    h.waiter = null;
    const xactMs = performance.now() - h.assignedAt;
    c.xactCount++;
    c.xactMsTotal += xactMs;
    if (this.transactionListeners.size === 0) return; // no event built when nobody listens
    const transport = (waiter === null ? undefined : this.clientFacts.get(waiter)?.info.kind) ?? 'unknown';
    const event: TransactionEvent = { database: pool.database, user: pool.user, transport, waitMs: h.waitMs, xactMs };
    for (const l of this.transactionListeners) l(event);
  }
}
