// State shared by all client sessions of one pooler: the config, the pools, client admission
// counts and the cancel keys. Client connections reach the rest of the pooler only through this.
import { SQLSTATE } from '@quicpool/wire';
import type { SessionStream, TransportKind } from '@quicpool/transport';
import type { ResolvedPoolerConfig } from '../config/pooler-config.js';
import { CancelRegistry, sendCancelRequest } from '../cancel/cancel-registry.js';
import type { Pool } from '../pool/pool.js';
import { PoolerControl } from '../admin/control.js';
import type { PoolStats } from '../pool/pool.js';
import type { SessionContext } from '../session/types.js';
import { ClientConnection } from './client-connection.js';

export interface PoolerStats {
  /** Client sessions open now (including those still in startup). */
  readonly clients: number;
  readonly clientsAcceptedTotal: number;
  readonly clientsRefusedTotal: number;
  readonly cancelRequestsTotal: number;
  readonly cancelsForwardedTotal: number;
  readonly pools: readonly (PoolStats & { readonly database: string; readonly user: string; readonly clients: number })[];
}

const poolKey = (database: string, user: string): string => `${database}\0${user}`;

export class PoolerCore {
  readonly cancelKeys = new CancelRegistry<ClientConnection>();
  readonly clients = new Set<ClientConnection>();
  private readonly pools = new Map<string, Pool>();
  private readonly admitted = new Map<string, number>();
  private admittedTotal = 0;
  private accepting = true;
  private clientsAcceptedTotal = 0;
  private clientsRefusedTotal = 0;
  private cancelRequestsTotal = 0;
  private cancelsForwardedTotal = 0;
  private readonly pendingCancels = new Set<Promise<void>>();

  /** Operator hooks (PAUSE, admin database, reload, SHOW facts); see admin/control.ts. */
  readonly control: PoolerControl = new PoolerControl(() => this.config, () => this.clients);

  constructor(private current: ResolvedPoolerConfig) {}

  /** Replaced as a whole by a reload; sessions read it live, pools get their settings refreshed. */
  get config(): ResolvedPoolerConfig {
    return this.current;
  }

  set config(next: ResolvedPoolerConfig) {
    this.current = next;
    this.control.configChanged();
  }

  accept(stream: SessionStream): void {
    this.clientsAcceptedTotal++;
    const c = new ClientConnection(stream, this);
    this.control.clientAccepted(c, stream.info);
    this.clients.add(c);
  }

  sessionContext(c: ClientConnection, transport: TransportKind): SessionContext {
    const config = this.config;
    return {
      transport,
      tlsAvailable: config.tls !== undefined,
      poolMode: config.pool.poolMode,
      sessionStatePolicy: config.pool.sessionStatePolicy,
      preparedStatementCacheSize: config.pool.preparedStatementCacheSize,
      allowInsecurePasswordAuth: config.allowInsecurePasswordAuth,
      authFailureDelay: config.authFailureDelayMs > 0,
      ignoreStartupParameters: config.ignoreStartupParameters,
      lookupUser: (name) => config.users.get(name),
      admit: (database, user) => {
        const refused = this.admit(database, user);
        if (refused === undefined) c.admittedPool = poolKey(database, user);
        else this.clientsRefusedTotal++;
        this.control.clientAdmitted(c, database, user, refused);
        return refused;
      },
    };
  }

  private admit(database: string, user: string): { sqlstate: string; message: string } | undefined {
    if (!this.accepting) return { sqlstate: SQLSTATE.CANNOT_CONNECT_NOW, message: 'the pooler is shutting down' };
    const refused = this.control.refusal(database, user);
    if (refused !== undefined) return refused;
    if (this.admittedTotal >= this.config.maxClientConnections) {
      return { sqlstate: SQLSTATE.TOO_MANY_CONNECTIONS, message: 'sorry, too many clients already' };
    }
    const key = poolKey(database, user);
    const n = this.admitted.get(key) ?? 0;
    const perPool = this.config.maxClientsPerPool;
    if (perPool > 0 && n >= perPool) {
      return { sqlstate: SQLSTATE.TOO_MANY_CONNECTIONS, message: `too many clients for database "${database}" and user "${user}" (maxClientsPerPool ${perPool})` };
    }
    this.admitted.set(key, n + 1);
    this.admittedTotal++;
    return undefined;
  }

  sessionClosed(c: ClientConnection): void {
    if (!this.clients.delete(c)) return;
    this.control.clientClosed(c);
    const key = c.admittedPool;
    if (key === null) return;
    c.admittedPool = null;
    this.admittedTotal--;
    const n = (this.admitted.get(key) ?? 1) - 1;
    if (n > 0) return void this.admitted.set(key, n);
    this.admitted.delete(key);
    // A pool that never logged in (e.g. its database does not exist) and has no clients left is
    // forgotten, so clients naming arbitrary databases cannot pile up pools.
    const pool = this.pools.get(key);
    if (pool !== undefined && !pool.hasConnected && pool.size === 0 && pool.stats().waiting === 0) {
      pool.close();
      this.pools.delete(key);
      this.control.poolClosed(pool);
    }
  }

  poolFor(database: string, user: string): Pool {
    const key = poolKey(database, user);
    let pool = this.pools.get(key);
    if (pool === undefined) {
      pool = this.control.createPool(database, user);
      this.pools.set(key, pool);
    }
    return pool;
  }

  /** A CancelRequest with one of our keys: cancel that session's query, if it has one running. */
  cancel(processId: number, secretKey: Buffer): void {
    this.cancelRequestsTotal++;
    const target = this.cancelKeys.lookup(processId, secretKey);
    const b = target?.backend;
    if (target === undefined || b === null || b === undefined || !target.session.busy) return;
    this.cancelsForwardedTotal++;
    const p = sendCancelRequest(this.config.server.host, this.config.server.port, b.processId, b.secretKey);
    this.pendingCancels.add(p);
    void p.then(() => this.pendingCancels.delete(p));
  }

  stopAccepting(): void {
    this.accepting = false;
  }

  closePools(immediate: boolean): void {
    for (const pool of this.pools.values()) {
      if (immediate) pool.destroyAll();
      else pool.close();
    }
  }

  async settled(): Promise<void> {
    await Promise.all([...this.pendingCancels]);
  }

  stats(): PoolerStats {
    return {
      clients: this.clients.size,
      clientsAcceptedTotal: this.clientsAcceptedTotal,
      clientsRefusedTotal: this.clientsRefusedTotal,
      cancelRequestsTotal: this.cancelRequestsTotal,
      cancelsForwardedTotal: this.cancelsForwardedTotal,
      pools: [...this.pools.entries()].map(([key, p]) => ({
        database: p.database,
        user: p.user,
        clients: this.admitted.get(key) ?? 0,
        ...p.stats(),
      })),
    };
  }
}

