// What all client sessions of one pooler share: the config, the pools (created on first use, one
// per (database, user)), admission counts, cancel keys, the clock and the write batcher, the
// virtual databases served in process (the admin console), PAUSE, and the view and events its
// observers read. Client sessions reach the rest of the pooler only through this.
import type { SessionInfo, SessionStream } from '@quicpool/transport';
import { SQLSTATE } from '@quicpool/wire';
import { AuthQuery } from './auth-query.js';
import type { ScramKeys } from '../auth/scram.js';
import { Cancels } from '../cancel/cancels.js';
import type { ResolvedPoolerConfig } from '../config/pooler-config.js';
import { Pool } from '../pool/pool.js';
import type { PoolUpstreamEvent, Waiter } from '../pool/pool.js';
import type { CancelKey, Refusal, SessionContext } from '../session/types.js';
import { CycleClock } from '../runtime/clock.js';
import type { Clock } from '../runtime/clock.js';
import type { ClientEvent, ClientRow, PoolerEvents, PoolerView, PoolRow, ServerRow } from './view.js';
import { WriteBatcher } from '../runtime/write-batcher.js';
import { Budgets } from '../workers/budgets.js';
import { joinPeers } from '../workers/peers.js';
import type { PeerMessage, Peers } from '../workers/peers.js';
import { SharedCounts } from '../workers/shared-counts.js';
import type { PoolerWorker } from '../workers/worker.js';
import { Admission } from './admission.js';
import { PauseState } from './pause.js';
import { makePool, servedInProcess } from './make-pool.js';
import type { PoolSurroundings } from './make-pool.js';

/** What the core needs from a client session's driver. */
export interface ClientHandle {
  readonly info: SessionInfo;
  /** Its row of SHOW CLIENTS, now (the core adds its worker). */
  row(): Omit<ClientRow, 'worker'>;
  /** Pooler shutdown: graceful lets a transaction in progress finish first. */
  shutdown(graceful: boolean): void;
  /** The server key of the request the session runs right now, or null: what a CancelRequest interrupts. */
  runningRequest(): CancelKey | null;
}

/** A database served in process instead of by the server (the admin console). */
export interface VirtualDatabase {
  /** Users allowed to open it (they authenticate to the pooler as usual). */
  readonly users: ReadonlySet<string>;
  /** Serve one new connection to it: `stream` carries protocol 3 from the pool's login on. */
  serve(stream: SessionStream): void;
}

const poolKey = (database: string, user: string): string => `${database}\0${user}`;

/** The only worker: nobody to talk to (its own news reaches it through Budgets). */
const NO_PEERS: Peers = { post: () => undefined, close: () => undefined };

export class PoolerCore {
  /** The pooler's clock, read once per read cycle of the batcher (see CycleClock). */
  readonly clock: CycleClock;
  readonly batcher: WriteBatcher;
  /** Replaced by the first core's when several share a thread (see createPooler). */
  events: PoolerEvents = { client: new Set(), transaction: new Set(), upstream: new Set() };
  /** Failed server logins by reason (a SQLSTATE or an errno), for SHOW STATS and the metrics. */
  private readonly serverLoginFailures = new Map<string, number>();
  private readonly clients = new Set<ClientHandle>();
  private readonly cancels: Cancels<ClientHandle>;
  /** This worker's index (0 for the only one). */
  readonly workerIndex: number;
  /** Daemon-wide counts: clients and server connections (see workers/shared-counts.ts). */
  private readonly counts: SharedCounts;
  private readonly peers: Peers;
  private readonly budgets: Budgets;
  /** Client sessions admitted to each pool, within the daemon-wide limits. */
  private readonly admission: Admission;
  private readonly pools = new Map<string, Pool>();
  private readonly virtualDatabases = new Map<string, VirtualDatabase>();
  private accepting = true;
  private readonly pauseState: PauseState;
  private clientsAcceptedTotal = 0;
  private clientsRefusedTotal = 0;
  private earlyDataSessionsTotal = 0;
  /** Called once when the last client session has ended (clientsGone). */
  private readonly emptyWaiters: (() => void)[] = [];
  /**
   * Per pool key: the SCRAM keys of the last client that authenticated to it, for a user with no
   * server password (auth_query users, scram_secret-only users): the pool's logins use them.
   */
  private readonly scramKeys = new Map<string, ScramKeys>();
  /** auth_query's one connection (as the auth user): a pool of its own, in no SHOW. */
  private lookupPool: Pool | null = null;
  private readonly authQuery: AuthQuery;
  /** What every pool of this core shares (see make-pool.ts). */
  private readonly surroundings: PoolSurroundings;

  constructor(
    private current: ResolvedPoolerConfig,
    clock: Clock,
    worker: PoolerWorker | null = null,
    /** Plain transactions skip the session machine's events (PoolerOptions.plainLane). */
    readonly plainLane = true,
  ) {
    this.workerIndex = worker?.index ?? 0;
    const workers = worker?.count ?? 1;
    this.counts = new SharedCounts(worker?.shared ?? SharedCounts.allocate(1, false), workers);
    this.peers = worker === null || workers === 1 ? NO_PEERS : joinPeers(worker.groupId, (m) => this.onPeer(m));
    this.clock = new CycleClock(clock);
    this.cancels = new Cancels<ClientHandle>(this.workerIndex, workers, () => this.peers, () => this.current.server, this.clock);
    this.admission = new Admission(this.counts, this.workerIndex);
    this.pauseState = new PauseState(this.clock);
    this.budgets = new Budgets(this.counts, this.workerIndex, this.peers, () => this.current.maxServerConnections, this.clock);
    this.batcher = new WriteBatcher(this.clock);
    this.surroundings = {
      config: () => this.current,
      clock: this.clock,
      batcher: this.batcher,
      scramKeys: this.scramKeys,
      served: (p, w, waitMs, xactMs) => this.served(p, w, waitMs, xactMs),
      upstream: (p, e) => this.upstreamEvent(p, e),
      serverRoleChanged: (server) => {
        for (const p of this.pools.values()) p.dropIdleOf(server);
        this.lookupPool?.dropIdleOf(server);
      },
    };
    this.authQuery = new AuthQuery(
      () => {
        const s = this.current.authQuery;
        if (s === undefined) throw new Error('auth_query is not configured');
        return s;
      },
      () => {
        const database = this.current.authQuery?.database ?? '';
        const user = this.current.authQuery?.user ?? '';
        return (this.lookupPool ??= makePool(this.surroundings, database, user, { key: poolKey(database, user), own: { poolSize: 1, minPoolSize: 0 } }));
      },
      this.clock,
    );
  }

  // --- auth_query ------------------------------------------------------------------------------

  /** Does `user` need an auth_query lookup before its login can proceed? */
  needsLookup(user: string): boolean {
    return this.current.authQuery !== undefined && !this.current.users.has(user) && this.authQuery.needsLookup(user);
  }

  /** Looks `user` up with auth_query; resolves once the result (found or not) is cached. */
  lookupUser(user: string): Promise<void> {
    return this.authQuery.lookup(user);
  }

  /** A client of `user` authenticated with SCRAM: its pool may log in to the server with these keys. */
  rememberScramKeys(database: string, user: string, keys: ScramKeys): void {
    if (this.current.users.get(user)?.serverPassword !== undefined) return; // a password logs in
    this.scramKeys.set(poolKey(database, user), keys);
  }

  /** Replaced as a whole by a reload; sessions read it live, pools get their settings refreshed. */
  get config(): ResolvedPoolerConfig {
    return this.current;
  }

  set config(next: ResolvedPoolerConfig) {
    this.current = next;
    for (const p of this.pools.values()) p.updateSettings(next.pool);
  }

  // --- client sessions -------------------------------------------------------------------------

  /** Client sessions open now (in startup or later). */
  get sessionCount(): number {
    return this.clients.size;
  }

  add(client: ClientHandle): void {
    this.clientsAcceptedTotal++;
    if (client.info.quic?.earlyData === true) this.earlyDataSessionsTotal++;
    this.clients.add(client);
    this.emit({ type: 'connected', info: client.info });
  }

  emit(e: ClientEvent): void {
    for (const l of this.events.client) l(e);
  }

  /** The facts a new session's state machine starts from, for `client`. */
  sessionContext(client: ClientHandle, onAdmitted: (key: string) => void): SessionContext {
    const config = this.config;
    return {
      transport: client.info.kind,
      tlsAvailable: config.tls !== undefined,
      poolMode: config.pool.poolMode,
      sessionStatePolicy: config.pool.sessionStatePolicy,
      sessionStatePolicyFor: (database) => config.databases.get(database)?.sessionStatePolicy,
      preparedStatementCacheSize: config.pool.preparedStatementCacheSize,
      allowInsecurePasswordAuth: config.allowInsecurePasswordAuth,
      authFailureDelay: config.authFailureDelayMs > 0,
      ignoreStartupParameters: config.ignoreStartupParameters,
      ignoreStartupParametersKey: config.ignoreStartupParametersKey,
      lookupUser: (name) => config.users.get(name) ?? (config.authQuery === undefined ? undefined : this.authQuery.cached(name)),
      describeUnknownUser: (name) => (config.authQuery === undefined ? 'no such user in the config' : `not in the config; ${this.authQuery.reason(name)}`),
      peerCertificate: () => client.info.tls?.peerCertificate ?? null,
      readOnlyEarlyData: config.earlyData === 'read-only' && client.info.quic?.earlyData === true,
      admit: (database, user) => {
        const refused = this.admit(database, user);
        if (refused === undefined || refused.afterAuthentication === true) {
          onAdmitted(poolKey(database, user));
          this.emit({ type: 'admitted', info: client.info, database, user });
        } else {
          this.clientsRefusedTotal++;
          this.emit({ type: 'refused', info: client.info, database, user, ...refused });
        }
        return refused;
      },
    };
  }

  private admit(database: string, user: string): Refusal | undefined {
    if (!this.accepting) return { sqlstate: SQLSTATE.CANNOT_CONNECT_NOW, message: 'the pooler is shutting down' };
    // Both limits hold for the whole daemon (every worker counts in the same place).
    const refused = this.admission.admit(poolKey(database, user), database, user, this.config);
    if (refused !== undefined) return refused;
    // Authenticated first, refused after: the refusal tells no one but the user itself that it is no admin.
    const vdb = this.virtualDatabases.get(database);
    if (vdb !== undefined && !vdb.users.has(user)) {
      return { sqlstate: SQLSTATE.INVALID_AUTHORIZATION_SPECIFICATION, message: `user "${user}" is not an admin user of the "${database}" console`, afterAuthentication: true };
    }
    return undefined;
  }

  /** The session ended; `admittedKey` is the pool key it was admitted to, if it was. */
  closed(client: ClientHandle, admittedKey: string | null): void {
    if (!this.clients.delete(client)) return;
    if (this.clients.size === 0) for (const w of this.emptyWaiters.splice(0)) w();
    if (admittedKey === null || !this.admission.leave(admittedKey)) return;
    // A pool that never logged in (e.g. its database does not exist) and has no clients left is
    // forgotten, so clients naming arbitrary databases cannot pile up pools.
    const pool = this.pools.get(admittedKey);
    if (pool !== undefined && !pool.hasConnected && pool.size === 0 && pool.stats().waiting === 0) {
      pool.close();
      this.pools.delete(admittedKey);
      this.scramKeys.delete(admittedKey);
      if (!this.virtualDatabases.has(pool.database)) {
        this.budgets.drop(admittedKey);
        this.admission.release(admittedKey);
      }
    }
  }

  // --- pools -----------------------------------------------------------------------------------

  poolFor(database: string, user: string): Pool {
    const key = poolKey(database, user);
    let pool = this.pools.get(key);
    if (pool !== undefined) return pool;
    const vdb = this.virtualDatabases.get(database);
    const connect = vdb === undefined ? undefined : servedInProcess((stream) => vdb.serve(stream), this.config.server, this.clock);
    // A real pool draws on the daemon-wide server budget; the admin console's is in process.
    const slot = vdb === undefined ? this.admission.hold(key) : null;
    const budget = slot === null ? undefined : (p: Parameters<Budgets['forPool']>[2]) => this.budgets.forPool(key, slot, p);
    pool = makePool(this.surroundings, database, user, { key, ...(connect !== undefined ? { connect } : {}), ...(budget !== undefined ? { budget } : {}) });
    if (this.pauseState.paused && vdb === undefined) pool.pause();
    this.pools.set(key, pool);
    return pool;
  }

  /** A pool's news about its server: counted, and told to whoever listens (the daemon logs it). */
  private upstreamEvent(pool: Pool, e: PoolUpstreamEvent): void {
    if (e.type === 'loginFailed') this.serverLoginFailures.set(e.reason, (this.serverLoginFailures.get(e.reason) ?? 0) + 1);
    if (this.events.upstream.size === 0) return;
    const event = { ...e, database: pool.database, user: pool.user };
    for (const l of this.events.upstream) l(event);
  }

  private served(pool: Pool, waiter: Waiter, waitMs: number, xactMs: number): void {
    if (this.pauseState.waiting && this.activeServers() === 0) this.pauseState.quiet();
    if (this.events.transaction.size === 0) return; // no event built when nobody listens
    const transport = (waiter as Partial<ClientHandle>).info?.kind ?? 'memory';
    const e = { database: pool.database, user: pool.user, transport, waitMs, xactMs };
    for (const l of this.events.transaction) l(e);
  }

  /** Serve `database` in process (the admin console); clients reach it through the pooler as any database. */
  addVirtualDatabase(database: string, vdb: VirtualDatabase): void {
    this.virtualDatabases.set(database, vdb);
  }

  /** Backends lent to clients, outside virtual databases (PAUSE waits for none). */
  activeServers(): number {
    let n = 0;
    for (const p of this.pools.values()) if (!this.virtualDatabases.has(p.database)) n += p.stats().active;
    return n;
  }

  get isPaused(): boolean {
    return this.pauseState.paused;
  }

  /**
   * PAUSE: transactions that have not started wait until resume(); running ones finish. Resolves
   * once no backend is lent to a client (as PgBouncer answers PAUSE), or with false after
   * `timeoutMs` of the pooler's clock.
   */
  pause(timeoutMs: number): Promise<boolean> {
    for (const p of this.pools.values()) if (!this.virtualDatabases.has(p.database)) p.pause();
    return this.pauseState.begin(this.activeServers(), timeoutMs);
  }

  resume(): void {
    this.pauseState.end();
    for (const p of this.pools.values()) p.resume();
  }

  // --- cancel requests -------------------------------------------------------------------------

  registerCancelKey(client: ClientHandle, protocolMinor: number): CancelKey {
    return this.cancels.register(client, protocolMinor);
  }

  unregisterCancelKey(processId: number): void {
    this.cancels.unregister(processId);
  }

  /**
   * A CancelRequest with one of our keys: cancel that session's request, if it has one running.
   * A key of another worker's session goes to that worker (the key names it).
   */
  cancel(processId: number, secretKey: Buffer): void {
    this.cancels.cancel(processId, secretKey);
  }

  /** News from another worker of the daemon. */
  private onPeer(m: PeerMessage): void {
    if (!this.cancels.receive(m)) this.budgets.receive(m);
  }

  // --- shutdown --------------------------------------------------------------------------------

  stopAccepting(): void {
    this.accepting = false;
  }

  /** Every session is told to shut down (graceful: transactions in progress first finish). */
  shutdownClients(graceful: boolean): void {
    for (const c of [...this.clients]) c.shutdown(graceful);
  }

  closePools(immediate: boolean): void {
    for (const pool of [...this.pools.values(), ...(this.lookupPool === null ? [] : [this.lookupPool])]) {
      if (immediate) pool.destroyAll();
      else pool.close();
    }
  }

  /** Resolves true once no client session is left, false when `deadlineMs` passes or `cut()` first. */
  clientsGone(deadlineMs: number): { readonly done: Promise<boolean>; cut(): void } {
    let finish: (gone: boolean) => void = () => undefined;
    const done = new Promise<boolean>((resolve) => {
      if (this.clients.size === 0) return resolve(true);
      const timer = this.clock.setTimer(() => finish(false), deadlineMs);
      const onEmpty = (): void => finish(true);
      finish = (gone) => {
        this.clock.clearTimer(timer);
        const i = this.emptyWaiters.indexOf(onEmpty);
        if (i >= 0) this.emptyWaiters.splice(i, 1);
        finish = () => undefined;
        resolve(gone);
      };
      this.emptyWaiters.push(onEmpty);
    });
    return { done, cut: () => finish(false) };
  }

  settled(): Promise<void> {
    return this.cancels.settled();
  }

  /** The pooler is closed: this worker leaves the group (its counts are zero by now). */
  leaveGroup(): void {
    this.peers.close();
  }

  // --- the view --------------------------------------------------------------------------------

  view(): PoolerView {
    const pools: PoolRow[] = [];
    const servers: ServerRow[] = [];
    for (const [key, p] of this.pools) {
      const virtual = this.virtualDatabases.has(p.database);
      pools.push({ database: p.database, user: p.user, poolMode: p.settings.poolMode, clients: this.admission.clientsOf(key), virtual, ...p.stats() });
      if (!virtual) for (const r of p.serverRows()) servers.push({ ...r, worker: this.workerIndex });
    }
    return {
      paused: this.pauseState.paused,
      clients: [...this.clients].map((c) => ({ ...c.row(), worker: this.workerIndex })),
      pools,
      servers,
      clientsAcceptedTotal: this.clientsAcceptedTotal,
      clientsRefusedTotal: this.clientsRefusedTotal,
      cancelRequestsTotal: this.cancels.requestsTotal,
      cancelsForwardedTotal: this.cancels.forwardedTotal,
      earlyDataSessionsTotal: this.earlyDataSessionsTotal,
      serverLoginFailuresTotal: Object.fromEntries(this.serverLoginFailures),
    };
  }
}
