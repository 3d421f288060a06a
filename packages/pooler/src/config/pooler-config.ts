// The pooler's whole configuration: where the real server is, who may log in (and how), limits.
// `resolvePoolerConfig` fills defaults, checks every value and precomputes secrets once, so the
// session code never parses configuration on a client's time.
import type { TlsServerOptions } from '@quicpool/transport';
import { canonicalFingerprint256 } from '@quicpool/transport';
import type { ServerAddress, ServerTls } from '../backend/dial.js';
import { md5Secret } from '../auth/md5.js';
import { parseScramSecret, scramSecretFromPassword } from '../auth/scram.js';
import type { ScramSecret } from '../auth/scram.js';
import type { PoolSettings } from './pool-settings.js';
import { resolvePoolSettings, SettingError } from './pool-settings.js';
import { TARGET_SESSION_ATTRS } from '../backend/server-role.js';
import type { TargetSessionAttrs } from '../backend/server-role.js';

/**
 * How a client proves who it is (names as in pg_hba.conf). 'cert': the session's connection
 * (QUIC, or TLS over TCP) presented a client certificate that verified against the listener's
 * client CA and is mapped to this user (`certCommonNames` / `certFingerprints`); no password.
 */
export type AuthMethod = 'scram-sha-256' | 'md5' | 'password' | 'trust' | 'cert';

export interface UserConfig {
  /** Plaintext password: allows every method, and logs in to the server. */
  readonly password?: string;
  /** A Postgres SCRAM secret (`SCRAM-SHA-256$<iter>:<salt>$<StoredKey>:<ServerKey>`), instead of password. */
  readonly scramSecret?: string;
  /** Default 'scram-sha-256'. */
  readonly auth?: AuthMethod;
  /** Password the pooler uses to log in to the real server as this user; default `password`. */
  readonly serverPassword?: string;
  /** `auth: 'cert'`: subject common names (CN) of the client certificates that may log in as this user. */
  readonly certCommonNames?: readonly string[];
  /** `auth: 'cert'`: SHA-256 fingerprints (hex, colons optional) of client certificates that may log in as this user. */
  readonly certFingerprints?: readonly string[];
}

/** TLS to the server: verified (`verify-full`) unless `mode: 'require'` says encrypted only. */
export interface ServerTlsConfig {
  /** Default 'verify-full': the certificate must chain to `ca` and carry the server's name. */
  readonly mode?: 'require' | 'verify-full';
  /** CAs (PEM) the server's certificate must chain to; default Node's bundled public roots. */
  readonly ca?: string;
  /** Name the certificate must carry; default the server's host. */
  readonly servername?: string;
  /** Client certificate and key (PEM), for servers that ask for one. */
  readonly cert?: string;
  readonly key?: string;
}

/**
 * auth_query (PgBouncer's auth_user/auth_query/auth_dbname): users not in `users` are looked up on
 * the server. `user` must be a configured user (the lookup connection logs in with its server
 * password); the query gets the name as $1 and returns (name, SCRAM secret).
 */
export interface AuthQueryConfig {
  readonly user: string;
  /** Default `SELECT usename, passwd FROM pg_shadow WHERE usename=$1` (needs a superuser, or a SECURITY DEFINER function). */
  readonly query?: string;
  /** Default 'postgres'. */
  readonly database?: string;
  /** Default 1000 names. */
  readonly cacheSize?: number;
  /** Default 60 000 ms. */
  readonly cacheTtlMs?: number;
}

export const DEFAULT_AUTH_QUERY = 'SELECT usename, passwd FROM pg_shadow WHERE usename=$1';

export interface AuthQuerySettings {
  /** The configured user the lookups log in as (its server password from the config). */
  readonly user: string;
  /** Takes the user name as $1, returns (name, secret) rows; the first row counts. */
  readonly query: string;
  /** The database the lookup connection logs in to. */
  readonly database: string;
  /** Names remembered at most (found or not); the oldest goes first. */
  readonly cacheSize: number;
  /** How long a result is remembered (ms). */
  readonly cacheTtlMs: number;
  /** Longest a lookup may take once it has the connection (ms); then it counts as failed. */
  readonly timeoutMs: number;
}

/** Settings of one database that differ from the pool's (PgBouncer's [databases] section). */
export interface DatabaseConfig {
  /** Transaction pooling: what a statement that leaves session state does in this database. */
  readonly sessionStatePolicy?: PoolSettings['sessionStatePolicy'];
  /** Which kind of server this database's pools use (default server.targetSessionAttrs). */
  readonly targetSessionAttrs?: TargetSessionAttrs;
}

/** The real PostgreSQL server(s). */
export interface ServerConfig {
  /**
   * A host name or IP, or a directory holding the server's unix socket (`<host>/.s.PGSQL.<port>`,
   * as libpq); `tls` asks for TLS after SSLRequest (TCP only).
   */
  readonly host: string;
  readonly port: number;
  readonly connectTimeoutMs?: number;
  readonly tls?: ServerTlsConfig;
  /**
   * Several servers (libpq's `host=a,b,c`): tried in this order for the first that matches
   * targetSessionAttrs; `host` and `port` are then ignored. A host without a port uses `port`.
   */
  readonly hosts?: readonly { readonly host: string; readonly port?: number }[];
  /** Which server a pool uses (libpq's target_session_attrs). Default 'read-write'. */
  readonly targetSessionAttrs?: TargetSessionAttrs;
  /**
   * Longest a client waits for a server connection while logins fail for a reason that passes
   * (connection refused or reset, 57P03, 53300, no host of the wanted kind yet): then it gets the
   * server's error. Also bounded by pool.queryWaitTimeoutMs. 0: such errors reach clients at once.
   * Default 60 000.
   */
  readonly outageWaitMs?: number;
}

export interface PoolerConfig {
  /**
   * The real PostgreSQL server: a host name or IP, or a directory holding its unix socket
   * (`<host>/.s.PGSQL.<port>`, as libpq); `tls` asks for TLS after SSLRequest (TCP only).
   */
  readonly server: ServerConfig;
  readonly users: Readonly<Record<string, UserConfig>>;
  readonly pool?: Partial<PoolSettings>;
  /** Per-database overrides, by database name. */
  readonly databases?: Readonly<Record<string, DatabaseConfig>>;
  /** Look up users the config does not list on the server (off when absent). */
  readonly authQuery?: AuthQueryConfig;
  /** Client sessions over all pools; the next gets 53300. Default 10 000. */
  readonly maxClientConnections?: number;
  /** Client sessions per (database, user) pool; 0 = no per-pool limit (default). */
  readonly maxClientsPerPool?: number;
  /**
   * Server connections over all pools (PgBouncer's max_db_connections, for every database
   * together): a pool that would exceed it waits, and idle connections of other pools are closed
   * to make room. 0 = no limit (default). Like poolSize, it holds for all workers of a daemon.
   */
  readonly maxServerConnections?: number;
  /**
   * Allow the `password` and `md5` methods on unencrypted TCP (they expose the password or a
   * replayable hash to anyone on the path). Default false. SCRAM is allowed on every transport.
   */
  readonly allowInsecurePasswordAuth?: boolean;
  /** Certificate for answering SSLRequest with 'S' on plain TCP; without it the answer is 'N'. */
  readonly tls?: TlsServerOptions;
  /** Startup parameters accepted and ignored (PgBouncer's ignore_startup_parameters). */
  readonly ignoreStartupParameters?: readonly string[];
  /**
   * How the refusal of an unsupported startup parameter names that list to the user (default
   * `ignoreStartupParameters`; the daemon passes its config key, `limits.ignore_startup_parameters`).
   */
  readonly ignoreStartupParametersKey?: string;
  /** Largest client message accepted (bytes). Default 64 MiB. */
  readonly maxMessageSize?: number;
  /** Startup and authentication must finish within this (ms), else 57014 (Postgres: authentication_timeout). Default 60 000. */
  readonly authTimeoutMs?: number;
  /**
   * A failed password login (28P01, also for unknown users) is answered only after this delay (ms;
   * Postgres's auth_delay), during which the session keeps its admission even if the client hangs
   * up. 0 answers at once. Default 500.
   */
  readonly authFailureDelayMs?: number;
  /**
   * Sessions whose first bytes arrived as QUIC 0-RTT early data (which an attacker may replay):
   * 'wait' (default): nothing reaches a backend before the handshake is confirmed;
   * 'read-only': before confirmation, single read-only statements of the simple protocol
   * (SELECT, WITH, VALUES, TABLE, SHOW) run inside a READ ONLY transaction the pooler opens;
   * everything else waits (see docs/security.md for what a replay can still cause).
   */
  readonly earlyData?: EarlyDataPolicy;
}

export type EarlyDataPolicy = 'wait' | 'read-only';

export interface ResolvedUser {
  readonly name: string;
  readonly auth: AuthMethod;
  readonly password: string | undefined;
  readonly scram: ScramSecret | undefined;
  /** "md5..." secret, only when a plaintext password is configured. */
  readonly md5: string | undefined;
  readonly serverPassword: string | undefined;
  /** `auth: 'cert'`: the certificates mapped to this user (CNs, and fingerprints as `AA:BB:...`). */
  readonly certCommonNames: ReadonlySet<string>;
  readonly certFingerprints: ReadonlySet<string>;
}

export interface ResolvedPoolerConfig {
  /** The first host (host, port, tls), the list, and how pools choose among them. */
  readonly server: ServerAddress & {
    readonly connectTimeoutMs: number;
    /** Never empty; the first is `host`/`port`. */
    readonly hosts: readonly ServerAddress[];
    readonly targetSessionAttrs: TargetSessionAttrs;
    readonly outageWaitMs: number;
  };
  readonly users: ReadonlyMap<string, ResolvedUser>;
  readonly pool: PoolSettings;
  readonly databases: ReadonlyMap<string, Required<DatabaseConfig>>;
  readonly authQuery: AuthQuerySettings | undefined;
  readonly maxClientConnections: number;
  readonly maxClientsPerPool: number;
  readonly maxServerConnections: number;
  readonly allowInsecurePasswordAuth: boolean;
  readonly tls: TlsServerOptions | undefined;
  readonly ignoreStartupParameters: ReadonlySet<string>;
  readonly ignoreStartupParametersKey: string;
  readonly maxMessageSize: number;
  readonly authTimeoutMs: number;
  readonly authFailureDelayMs: number;
  readonly earlyData: EarlyDataPolicy;
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

function resolveUser(name: string, u: UserConfig): ResolvedUser {
  const auth = u.auth ?? 'scram-sha-256';
  let scram: ScramSecret | undefined;
  if (u.scramSecret !== undefined) {
    scram = parseScramSecret(u.scramSecret);
    if (scram === undefined) throw new ConfigError(`users.${name}.scramSecret: not a SCRAM-SHA-256 secret`);
  } else if (u.password !== undefined && auth === 'scram-sha-256') {
    scram = scramSecretFromPassword(u.password);
  }
  switch (auth) {
    case 'scram-sha-256':
      if (scram === undefined) throw new ConfigError(`users.${name}: scram-sha-256 needs password or scramSecret`);
      break;
    case 'md5':
    case 'password':
      if (u.password === undefined) throw new ConfigError(`users.${name}: ${auth} needs a plaintext password`);
      break;
    case 'trust':
      break;
    case 'cert':
      if ((u.certCommonNames?.length ?? 0) + (u.certFingerprints?.length ?? 0) === 0) {
        throw new ConfigError(`users.${name}: cert needs the certificates that may log in as ${name} (certCommonNames or certFingerprints; in TOML cert_common_names or cert_fingerprints)`);
      }
      break;
    default: {
      const never: never = auth;
      throw new ConfigError(`users.${name}.auth: unknown method ${JSON.stringify(never)}`);
    }
  }
  return {
    name,
    auth,
    password: u.password,
    scram,
    md5: u.password === undefined ? undefined : md5Secret(name, u.password),
    serverPassword: u.serverPassword ?? u.password,
    certCommonNames: new Set(u.certCommonNames ?? []),
    certFingerprints: new Set((u.certFingerprints ?? []).map((fp) => {
      const canonical = canonicalFingerprint256(fp);
      if (canonical === null) throw new ConfigError(`users.${name}.certFingerprints: ${JSON.stringify(fp)} is not a SHA-256 fingerprint (64 hex digits)`);
      return canonical;
    })),
  };
}

function resolveServerTls(host: string, t: ServerTlsConfig): ServerTls {
  const mode = t.mode ?? 'verify-full';
  if (mode !== 'verify-full' && mode !== 'require') throw new ConfigError(`server.tls.mode: must be 'verify-full' or 'require', got ${JSON.stringify(mode)}`);
  if (host.startsWith('/')) throw new ConfigError('server.tls: the server is reached over its unix socket (host is a directory); TLS is for TCP');
  if ((t.cert === undefined) !== (t.key === undefined)) throw new ConfigError('server.tls: cert and key go together');
  return {
    mode,
    ...(t.ca !== undefined ? { ca: t.ca } : {}),
    ...(t.servername !== undefined ? { servername: t.servername } : {}),
    ...(t.cert !== undefined ? { cert: t.cert } : {}),
    ...(t.key !== undefined ? { key: t.key } : {}),
  };
}

function earlyDataPolicy(v: EarlyDataPolicy): EarlyDataPolicy {
  if (v !== 'wait' && v !== 'read-only') throw new ConfigError(`earlyData: must be 'wait' or 'read-only', got ${JSON.stringify(v)}`);
  return v;
}

function targetSessionAttrs(key: string, v: TargetSessionAttrs | undefined): TargetSessionAttrs {
  if (v === undefined) return 'read-write';
  if (!TARGET_SESSION_ATTRS.includes(v)) throw new ConfigError(`${key}: must be one of ${TARGET_SESSION_ATTRS.join(', ')}, got ${JSON.stringify(v)}`);
  return v;
}

function count(key: string, value: number, min: number): number {
  if (!Number.isInteger(value) || value < min) throw new ConfigError(`${key}: must be a whole number >= ${min}, got ${value}`);
  return value;
}

export function resolvePoolerConfig(c: PoolerConfig): ResolvedPoolerConfig {
  const users = new Map<string, ResolvedUser>();
  for (const [name, u] of Object.entries(c.users)) users.set(name, resolveUser(name, u));
  let pool: PoolSettings;
  try {
    pool = resolvePoolSettings(c.pool);
  } catch (e) {
    if (e instanceof SettingError) throw new ConfigError(`pool.${e.message}`);
    throw e;
  }
  const databases = new Map<string, Required<DatabaseConfig>>();
  for (const [name, d] of Object.entries(c.databases ?? {})) {
    try {
      databases.set(name, {
        sessionStatePolicy: resolvePoolSettings({ sessionStatePolicy: d.sessionStatePolicy ?? pool.sessionStatePolicy }).sessionStatePolicy,
        targetSessionAttrs: targetSessionAttrs(`databases.${name}.targetSessionAttrs`, d.targetSessionAttrs ?? targetSessionAttrs('server.targetSessionAttrs', c.server.targetSessionAttrs)),
      });
    } catch (e) {
      if (e instanceof SettingError) throw new ConfigError(`databases.${name}.${e.message}`);
      throw e;
    }
  }
  const connectTimeoutMs = count('server.connectTimeoutMs', c.server.connectTimeoutMs ?? 10_000, 1);
  let authQuery: AuthQuerySettings | undefined;
  if (c.authQuery !== undefined) {
    const a = c.authQuery;
    if (!users.has(a.user)) throw new ConfigError(`authQuery.user: "${a.user}" is not a configured user (the lookups log in as it, with its server password)`);
    const query = a.query ?? DEFAULT_AUTH_QUERY;
    if (!query.includes('$1')) throw new ConfigError('authQuery.query: must take the user name as $1');
    authQuery = {
      user: a.user,
      query,
      database: a.database ?? 'postgres',
      cacheSize: count('authQuery.cacheSize', a.cacheSize ?? 1000, 1),
      cacheTtlMs: count('authQuery.cacheTtlMs', a.cacheTtlMs ?? 60_000, 0),
      timeoutMs: connectTimeoutMs,
    };
  }
  const port = count('server.port', c.server.port, 1);
  const listed = c.server.hosts ?? [{ host: c.server.host, port }];
  if (listed.length === 0) throw new ConfigError('server.hosts: empty (list at least one server, or leave it out and set host)');
  const hosts = listed.map((h, i): ServerAddress => {
    if (h.host === '') throw new ConfigError(`server.hosts[${i}]: no host`);
    const tls = c.server.tls === undefined ? undefined : resolveServerTls(h.host, c.server.tls);
    return { host: h.host, port: count(`server.hosts[${i}].port`, h.port ?? port, 1), ...(tls !== undefined ? { tls } : {}) };
  });
  const first = hosts[0]!;
  return {
    server: {
      ...first,
      connectTimeoutMs,
      hosts,
      targetSessionAttrs: targetSessionAttrs('server.targetSessionAttrs', c.server.targetSessionAttrs),
      outageWaitMs: count('server.outageWaitMs', c.server.outageWaitMs ?? 60_000, 0),
    },
    users,
    pool,
    databases,
    authQuery,
    maxClientConnections: count('maxClientConnections', c.maxClientConnections ?? 10_000, 1),
    maxClientsPerPool: count('maxClientsPerPool', c.maxClientsPerPool ?? 0, 0),
    maxServerConnections: count('maxServerConnections', c.maxServerConnections ?? 0, 0),
    allowInsecurePasswordAuth: c.allowInsecurePasswordAuth ?? false,
    tls: c.tls,
    ignoreStartupParameters: new Set(c.ignoreStartupParameters ?? ['extra_float_digits']),
    ignoreStartupParametersKey: c.ignoreStartupParametersKey ?? 'ignoreStartupParameters',
    maxMessageSize: count('maxMessageSize', c.maxMessageSize ?? 64 * 1024 * 1024, 1024),
    authTimeoutMs: count('authTimeoutMs', c.authTimeoutMs ?? 60_000, 1),
    authFailureDelayMs: count('authFailureDelayMs', c.authFailureDelayMs ?? 500, 0),
    earlyData: earlyDataPolicy(c.earlyData ?? 'wait'),
  };
}
