// Settings of one backend pool, with the defaults a production pooler would pick. Validation
// names the setting and what is wrong, so a config loader can point at the offending key.
export type PoolMode = 'transaction' | 'session';

export interface PoolSettings {
  /** When a backend is attached to a client: per transaction (default) or for the whole session. */
  readonly poolMode: PoolMode;
  /** Backends per (database, user). */
  readonly poolSize: number;
  /** Backends kept open even when idle. */
  readonly minPoolSize: number;
  /** How long a client may wait for a backend before it gets an error (ms). */
  readonly queryWaitTimeoutMs: number;
  /** A backend idle this long is closed (ms), down to minPoolSize. */
  readonly serverIdleTimeoutMs: number;
  /** A backend older than this is closed when next released (ms). */
  readonly serverLifetimeMs: number;
  /** Run before a session-mode backend (or one whose session state may have changed) is reused. */
  readonly serverResetQuery: string;
  /** A client with no backend and no request this long is closed with 57P05 (ms; 0 = never). */
  readonly clientIdleTimeoutMs: number;
  /** A client idle inside a transaction this long is closed with 25P03 (ms; 0 = never). */
  readonly idleTransactionTimeoutMs: number;
  /**
   * A request whose answer (ReadyForQuery) takes longer than this closes the client with 57014 and
   * its backend (ms; 0 = never). A last-resort guard: prefer Postgres's statement_timeout.
   */
  readonly queryTimeoutMs: number;
  /** A backend idle this long is checked with serverCheckQuery before it is reused (ms; 0 = always). */
  readonly serverCheckDelayMs: number;
  /** Health check query; the empty query costs the server least. */
  readonly serverCheckQuery: string;
  /**
   * Server logins under way at once per pool (per worker). 1, as PgBouncer: a burst of clients
   * opens connections one after another while those already open serve them, instead of
   * PostgreSQL starting many backends at once (each costs it milliseconds of CPU).
   */
  readonly maxLoginsInProgress: number;
  /**
   * Transaction pooling: a statement that leaves session state (LISTEN, session advisory locks,
   * WITH HOLD cursors, temp tables, SET of untracked settings, SQL PREPARE): 'pin' the backend to
   * the client until it goes, 'reject' it (0A000), or 'reset' the backend on release.
   */
  readonly sessionStatePolicy: 'pin' | 'reject' | 'reset';
  /** Transaction pooling: named prepared statements kept per backend (LRU; evicted with Close). */
  readonly preparedStatementCacheSize: number;
}

export const DEFAULT_POOL_SETTINGS: PoolSettings = {
  poolMode: 'transaction',
  poolSize: 20,
  minPoolSize: 0,
  queryWaitTimeoutMs: 120_000,
  serverIdleTimeoutMs: 600_000,
  serverLifetimeMs: 3_600_000,
  serverResetQuery: 'DISCARD ALL',
  clientIdleTimeoutMs: 0,
  idleTransactionTimeoutMs: 0,
  queryTimeoutMs: 0,
  serverCheckDelayMs: 30_000,
  serverCheckQuery: '',
  maxLoginsInProgress: 1,
  sessionStatePolicy: 'pin',
  preparedStatementCacheSize: 1000,
};

export class SettingError extends Error {
  override readonly name = 'SettingError';
  constructor(readonly key: keyof PoolSettings, message: string) {
    super(`${key}: ${message}`);
  }
}

function wholeNumber(key: keyof PoolSettings, value: number, min: number): void {
  if (!Number.isInteger(value) || value < min) throw new SettingError(key, `must be a whole number >= ${min}, got ${value}`);
}

/** Fills defaults and checks every value; throws SettingError naming the first bad key. */
export function resolvePoolSettings(partial: Partial<PoolSettings> = {}): PoolSettings {
  const s: PoolSettings = { ...DEFAULT_POOL_SETTINGS, ...partial };
  switch (s.poolMode) {
    case 'transaction':
    case 'session':
      break;
    default: {
      const mode: never = s.poolMode;
      throw new SettingError('poolMode', `must be 'transaction' or 'session', got ${JSON.stringify(mode)}`);
    }
  }
  wholeNumber('poolSize', s.poolSize, 1);
  wholeNumber('minPoolSize', s.minPoolSize, 0);
  if (s.minPoolSize > s.poolSize) throw new SettingError('minPoolSize', `must not exceed poolSize (${s.poolSize}), got ${s.minPoolSize}`);
  wholeNumber('queryWaitTimeoutMs', s.queryWaitTimeoutMs, 0);
  wholeNumber('serverIdleTimeoutMs', s.serverIdleTimeoutMs, 0);
  wholeNumber('serverLifetimeMs', s.serverLifetimeMs, 0);
  wholeNumber('clientIdleTimeoutMs', s.clientIdleTimeoutMs, 0);
  wholeNumber('idleTransactionTimeoutMs', s.idleTransactionTimeoutMs, 0);
  wholeNumber('queryTimeoutMs', s.queryTimeoutMs, 0);
  wholeNumber('serverCheckDelayMs', s.serverCheckDelayMs, 0);
  wholeNumber('maxLoginsInProgress', s.maxLoginsInProgress, 1);
  wholeNumber('preparedStatementCacheSize', s.preparedStatementCacheSize, 1);
  if (!['pin', 'reject', 'reset'].includes(s.sessionStatePolicy)) {
    throw new SettingError('sessionStatePolicy', `must be 'pin', 'reject' or 'reset', got ${JSON.stringify(s.sessionStatePolicy)}`);
  }
  return s;
}
