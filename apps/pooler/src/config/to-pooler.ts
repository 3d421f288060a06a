// quicpool.toml (snake_case, grouped for operators) -> the engine's PoolerConfig, and the rows of
// SHOW CONFIG (secrets hidden).
import type { AuthMethod, ConfigRow, DatabaseConfig, PoolerConfig, PoolMode, PoolSettings, ServerTlsConfig, TargetSessionAttrs, UserConfig } from '@quicpool/pooler';
import type { TlsServerOptions } from '@quicpool/transport';
import type { AppConfig, Key, UserSettings, Value } from './load.js';
import { ALL_KEYS, specOf } from './load.js';

export interface Upstream {
  /** Host name or IP, or the directory of the server's unix socket. */
  readonly host: string;
  readonly port: number;
  readonly tls?: ServerTlsConfig;
  /** upstream.hosts: several servers (then host and port are the first's). */
  readonly hosts?: readonly { readonly host: string; readonly port: number }[];
  /** Users the embedded default adds (its superuser). */
  readonly extraUsers?: ReadonlyMap<string, UserSettings>;
}

function user(u: UserSettings): UserConfig {
  const out: { -readonly [K in keyof UserConfig]?: UserConfig[K] } = {};
  if (u.password !== undefined) out.password = u.password;
  if (u.scram_secret !== undefined) out.scramSecret = u.scram_secret;
  if (u.auth !== undefined) out.auth = u.auth as AuthMethod;
  if (u.server_password !== undefined) out.serverPassword = u.server_password;
  if (u.cert_common_names !== undefined) out.certCommonNames = u.cert_common_names;
  if (u.cert_fingerprints !== undefined) out.certFingerprints = u.cert_fingerprints;
  return out;
}

export function toPoolerConfig(c: AppConfig, upstream: Upstream, tls: TlsServerOptions | undefined): PoolerConfig {
  const users: Record<string, UserConfig> = {};
  for (const [name, u] of upstream.extraUsers ?? []) users[name] = user(u);
  for (const [name, u] of c.users) users[name] = user(u);
  const config: PoolerConfig = {
    server: {
      host: upstream.host,
      port: upstream.port,
      connectTimeoutMs: c.get<number>('upstream.connect_timeout_ms'),
      ...(upstream.tls !== undefined ? { tls: upstream.tls } : {}),
      ...(upstream.hosts !== undefined ? { hosts: upstream.hosts } : {}),
      targetSessionAttrs: c.get<TargetSessionAttrs>('upstream.target_session_attrs'),
      outageWaitMs: c.get<number>('upstream.outage_wait_ms'),
    },
    users,
    pool: {
      poolMode: c.get<PoolMode>('pool.mode'),
      poolSize: c.get<number>('pool.size'),
      minPoolSize: c.get<number>('pool.min_size'),
      queryWaitTimeoutMs: c.get<number>('pool.query_wait_timeout_ms'),
      serverIdleTimeoutMs: c.get<number>('pool.server_idle_timeout_ms'),
      serverLifetimeMs: c.get<number>('pool.server_lifetime_ms'),
      serverResetQuery: c.get<string>('pool.server_reset_query'),
      serverCheckDelayMs: c.get<number>('pool.server_check_delay_ms'),
      serverCheckQuery: c.get<string>('pool.server_check_query'),
      maxLoginsInProgress: c.get<number>('pool.max_logins_in_progress'),
      clientIdleTimeoutMs: c.get<number>('pool.client_idle_timeout_ms'),
      idleTransactionTimeoutMs: c.get<number>('pool.idle_transaction_timeout_ms'),
      queryTimeoutMs: c.get<number>('pool.query_timeout_ms'),
      sessionStatePolicy: c.get<PoolSettings['sessionStatePolicy']>('pool.session_state_policy'),
    },
    databases: Object.fromEntries(
      [...c.databases].map(([name, d]): [string, DatabaseConfig] => [
        name,
        {
          ...(d.session_state_policy === undefined ? {} : { sessionStatePolicy: d.session_state_policy as PoolSettings['sessionStatePolicy'] }),
          ...(d.target_session_attrs === undefined ? {} : { targetSessionAttrs: d.target_session_attrs as TargetSessionAttrs }),
        },
      ]),
    ),
    ...(c.get<string | null>('auth.auth_user') === null
      ? {}
      : {
          authQuery: {
            user: c.get<string>('auth.auth_user'),
            query: c.get<string>('auth.auth_query'),
            database: c.get<string>('auth.auth_dbname'),
            cacheSize: c.get<number>('auth.auth_cache_size'),
            cacheTtlMs: c.get<number>('auth.auth_cache_ttl_ms'),
          },
        }),
    maxClientConnections: c.get<number>('limits.max_client_connections'),
    maxClientsPerPool: c.get<number>('limits.max_clients_per_pool'),
    maxServerConnections: c.get<number>('limits.max_server_connections'),
    maxMessageSize: c.get<number>('limits.max_message_size'),
    authTimeoutMs: c.get<number>('limits.auth_timeout_ms'),
    authFailureDelayMs: c.get<number>('limits.auth_failure_delay_ms'),
    allowInsecurePasswordAuth: c.get<boolean>('limits.allow_insecure_password_auth'),
    ignoreStartupParameters: c.get<readonly string[]>('limits.ignore_startup_parameters'),
    ignoreStartupParametersKey: 'limits.ignore_startup_parameters',
    earlyData: c.get<string>('quic.early_data') === 'read-only' ? 'read-only' : 'wait',
  };
  return tls === undefined ? config : { ...config, tls };
}

const show = (v: unknown): string => (v === null ? '' : Array.isArray(v) ? v.join(',') : String(v));

export function configRows(c: AppConfig): ConfigRow[] {
  const rows: ConfigRow[] = ALL_KEYS.map((key) => {
    const spec = specOf(key);
    return { key, value: show(c.get(key)), default: show(spec.default), changeable: spec.live };
  });
  for (const [name, d] of c.databases) {
    for (const [key, value] of Object.entries(d)) rows.push({ key: `databases.${name}.${key}`, value, default: '', changeable: true });
  }
  for (const [name, u] of c.users) {
    rows.push({ key: `users.${name}.auth`, value: u.auth ?? 'scram-sha-256', default: 'scram-sha-256', changeable: true });
    for (const map of ['cert_common_names', 'cert_fingerprints'] as const) {
      const v = u[map];
      if (v !== undefined) rows.push({ key: `users.${name}.${map}`, value: show(v), default: '', changeable: true });
    }
    for (const secret of ['password', 'scram_secret', 'server_password'] as const) {
      if (u[secret] !== undefined) rows.push({ key: `users.${name}.${secret}`, value: '********', default: '', changeable: true });
    }
  }
  return rows;
}

/** Keys whose change a RELOAD cannot apply (they need a restart). */
export function restartOnlyChanges(before: AppConfig, after: AppConfig): string[] {
  return ALL_KEYS.filter((k) => !specOf(k).live && show(before.get(k)) !== show(after.get(k)));
}

/** What a reload leaves running: `after` for live keys, `before` for the restart-only ones. */
export function applyLive(before: AppConfig, after: AppConfig): AppConfig {
  const values = new Map(after.values);
  for (const k of ALL_KEYS) if (!specOf(k).live) values.set(k, before.get(k));
  return { ...after, values, get: <T extends Value>(key: Key): T => values.get(key) as T };
}

const ENGINE_KEYS: Readonly<Record<string, string>> = {
  'pool.poolMode': 'pool.mode',
  'pool.poolSize': 'pool.size',
  'pool.minPoolSize': 'pool.min_size',
  'pool.queryWaitTimeoutMs': 'pool.query_wait_timeout_ms',
  'pool.serverIdleTimeoutMs': 'pool.server_idle_timeout_ms',
  'pool.serverLifetimeMs': 'pool.server_lifetime_ms',
  'pool.clientIdleTimeoutMs': 'pool.client_idle_timeout_ms',
  'pool.idleTransactionTimeoutMs': 'pool.idle_transaction_timeout_ms',
  'pool.queryTimeoutMs': 'pool.query_timeout_ms',
  'pool.serverCheckDelayMs': 'pool.server_check_delay_ms',
  'pool.maxLoginsInProgress': 'pool.max_logins_in_progress',
  'pool.sessionStatePolicy': 'pool.session_state_policy',
  'authQuery.user': 'auth.auth_user',
  'authQuery.query': 'auth.auth_query',
  'authQuery.cacheSize': 'auth.auth_cache_size',
  'server.connectTimeoutMs': 'upstream.connect_timeout_ms',
  'server.tls': 'upstream.tls',
  'server.tls.mode': 'upstream.tls',
  'server.hosts': 'upstream.hosts',
  'server.targetSessionAttrs': 'upstream.target_session_attrs',
  'server.outageWaitMs': 'upstream.outage_wait_ms',
  maxClientConnections: 'limits.max_client_connections',
  maxClientsPerPool: 'limits.max_clients_per_pool',
  maxServerConnections: 'limits.max_server_connections',
  maxMessageSize: 'limits.max_message_size',
  authTimeoutMs: 'limits.auth_timeout_ms',
  authFailureDelayMs: 'limits.auth_failure_delay_ms',
};

/** The engine's ConfigError ("pool.poolSize: ...", "users.app.scramSecret: ...") as [key, detail] in TOML names. */
export function engineErrorKey(message: string): [string, string] {
  const colon = message.indexOf(':');
  const key = colon < 0 ? 'config' : message.slice(0, colon);
  const detail = colon < 0 ? message : message.slice(colon + 1).trim();
  const toml = ENGINE_KEYS[key] ?? key.replace(/\.scramSecret$/, '.scram_secret').replace(/\.serverPassword$/, '.server_password').replace(/\.certFingerprints$/, '.cert_fingerprints').replace(/^(databases\..*)\.sessionStatePolicy$/, '$1.session_state_policy');
  return [toml, detail];
}
