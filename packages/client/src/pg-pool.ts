// A drop-in `pg.Pool` whose clients run over QUIC session streams. It IS a pg.Pool (subclass):
// query, connect/release, the events, end, totalCount/idleCount/waitingCount behave as pg's, so
// libraries built on pg.Pool (Drizzle, Kysely, Knex, plain pg) work unchanged. The only change is
// the Client class pg.Pool instantiates. `transport: 'tcp' | 'tls'` keeps pg's own sockets, so one
// code path serves both.
import pg from 'pg';
import { SessionManager } from './session-manager.js';
import type { SessionManagerOptions } from './options.js';
import { QuicClient } from './pg-client.js';
import type { QuicClientConfig } from './pg-client.js';
import type { FastStartMode } from './fast-start.js';

export type PoolTransport = 'quic' | 'tcp' | 'tls';

export interface QuicPoolConfig extends Omit<pg.PoolConfig, 'Client' | 'stream'> {
  /** Default `'quic'`. `'tcp'`/`'tls'`: pg's own socket to `host:port` (`'tls'` verifies certificates). */
  readonly transport?: PoolTransport;
  /**
   * QUIC: the session manager's options (the pool then owns the manager and closes it in `end()`),
   * or a SessionManager shared with other pools (closed by you).
   */
  readonly quic?: SessionManagerOptions | SessionManager;
  /**
   * QUIC: send a new session's first query right behind its last login message (QuicClient's
   * `fastStart`). Default true; 'early-data' also in 0-RTT on a resumed connection.
   */
  readonly fastStart?: FastStartMode;
}

interface PendingItem {
  callback(err: Error, client: undefined, release: () => void): void;
}
interface PoolInternals {
  _pendingQueue: PendingItem[];
}

export class QuicPool extends pg.Pool {
  /** The session manager (QUIC), or null for `tcp`/`tls`. Its `stats()` has the QUIC counters. */
  readonly sessions: SessionManager | null;
  readonly transport: PoolTransport;
  private readonly ownsSessions: boolean;

  constructor(config: QuicPoolConfig = {}) {
    const { transport = 'quic', quic, ...pgConfig } = config;
    let sessions: SessionManager | null = null;
    let owns = false;
    let poolConfig: pg.PoolConfig = pgConfig;
    if (transport === 'quic') {
      if (quic === undefined) throw new TypeError("QuicPool: transport 'quic' needs the `quic` option (endpoints, certificates)");
      if (pgConfig.ssl !== undefined && pgConfig.ssl !== false) {
        throw new TypeError('QuicPool: leave `ssl` unset with QUIC - QUIC already encrypts and verifies (no TLS inside the stream)');
      }
      owns = !(quic instanceof SessionManager);
      const manager = quic instanceof SessionManager ? quic : new SessionManager(quic);
      sessions = manager;
      class PooledQuicClient extends QuicClient {
        constructor(c: Omit<QuicClientConfig, 'sessions'>) {
          super({ ...c, password: c.password, sessions: manager }); // password is non-enumerable
        }
      }
      poolConfig = { ...pgConfig, Client: PooledQuicClient as unknown as NonNullable<pg.PoolConfig['Client']> };
    } else if (transport === 'tls') {
      poolConfig = { ...pgConfig, ssl: pgConfig.ssl === undefined || pgConfig.ssl === true ? { rejectUnauthorized: true } : pgConfig.ssl };
    }
    super(poolConfig);
    this.transport = transport;
    this.sessions = sessions;
    this.ownsSessions = owns;
  }

  /**
   * Like pg.Pool's: running clients finish and are closed as they are released; then the session
   * manager closes. Unlike pg.Pool, callers still waiting for a client are rejected (pg.Pool would
   * leave them pending forever).
   */
  override end(): Promise<void>;
  override end(callback: () => void): void;
  override end(callback?: () => void): Promise<void> | void {
    const wasEnding = this.ending;
    const p = super.end();
    if (!wasEnding) {
      const waiting = (this as unknown as PoolInternals)._pendingQueue.splice(0);
      const err = new Error('Cannot use a pool after calling end on the pool');
      for (const item of waiting) item.callback(err, undefined, () => undefined);
    }
    const all = wasEnding ? p : p.then(async () => {
      // pg.Pool resolves end() as soon as it has asked every client to end; the manager's
      // graceful close waits until their sessions are really over (streams closed).
      if (this.ownsSessions && this.sessions !== null) await this.sessions.close();
    });
    if (callback === undefined) return all;
    all.then(callback, callback);
  }
}
