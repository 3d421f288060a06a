// The backends of one (database, user) pair. Every backend sits in exactly one of the lists
// below, matching its state, and moves only through lists.move. Clients that cannot get a backend
// wait in a FIFO queue with a deadline (queryWaitTimeoutMs). PAUSE is a state of the pool (as in
// PgBouncer): waiters queue, nothing is handed out until resume(). The pool measures what it
// serves (wait and transaction times, with the pooler's clock) and keeps every count of its own.
// While the server cannot be reached for a reason that passes (a restart, a failover), clients
// wait here as for a full pool, and one login at a time retries with backoff (server-watch.ts).
// Here: lending backends (acquire, the health check, release and its reset, handOver), PAUSE,
// closing them, and how many to open (refill: what waiters need, at most max_logins_in_progress
// logins at once, as PgBouncer; each ended login starts the next). Its parts besides: opener.ts logs in (and what a
// failed login means for waiters), maintenance.ts is the upkeep every second, idle-giving.ts gives
// idle ones to other workers, role-change.ts leaves a server whose new role does not suit, and
// views.ts is what the pool shows (stats, serverRows).
import { encodeFrontend, SQLSTATE } from '@quicpool/wire';
import type { PoolSettings } from '../config/pool-settings.js';
import { Backend } from '../backend/backend.js';
import { Link } from '../backend/link.js';
import type { Waiter } from '../backend/link.js';
import type { BackendLogin } from '../backend/connect.js';
import { sameServer } from '../backend/dial.js';
import type { ServerAddress } from '../backend/dial.js';
import { fatal } from '../backend/login.js';
import { every } from '../runtime/clock.js';
import { PreparedRegistry } from '../prepared/registry.js';
import type { ReleaseFacts, ServerRow } from './types.js';
import type { BudgetedPool, ServerBudget } from '../workers/budgets.js';
import { BackendLists } from './backend-lists.js';
import { IdleGiving } from './idle-giving.js';
import { Maintenance } from './maintenance.js';
import { Opener } from './opener.js';
import { leaveIfUnsuitable } from './role-change.js';
import { ServerParameters } from './server-parameters.js';
import { ServerWatch } from './server-watch.js';
import type { PoolDependencies, PoolStats } from './types.js';
import { PoolTotals } from './totals.js';
import { poolStats, serverRows } from './views.js';
import { WaitQueue } from './wait-queue.js';

export type { Waiter } from '../backend/link.js';
export type { PoolDependencies, PoolStats, PoolUpstreamEvent, ReleaseFacts, ServerRow, ServerState } from './types.js';
export { IDLE_BEFORE_GIVING_MS } from './idle-giving.js';

export class Pool implements BudgetedPool {
  /** Its server connections, each in the list of its state. */
  private readonly lists = new BackendLists();
  /** Opens its server connections (the logins under way). */
  private readonly opener: Opener;
  /** Clients waiting for a server connection (PAUSE, a full pool, the server down). */
  private readonly waits: WaitQueue;
  /** Idle connections for other workers that want them. */
  private readonly giving: IdleGiving;
  /** The server's parameters, which logins wait for (the pool's first server connection tells them). */
  private readonly params: ServerParameters;
  private readonly budget: ServerBudget | undefined;
  private readonly maintenance: Maintenance;
  private readonly stopMaintenance: () => void;
  /** Outages of the server (logins fail for a reason that passes): retries, what waits, what it says. */
  private readonly watch: ServerWatch;
  private closed = false;
  private paused = false;
  private readonly totals = new PoolTotals();
  /** The prepared statements this pool's backends accepted (what clients without a backend may prepare). */
  readonly prepared: PreparedRegistry;

  constructor(
    readonly database: string,
    readonly user: string,
    /** This pool's own copy: a reload changes it in place (`updateSettings`). */
    readonly settings: PoolSettings,
    login: BackendLogin,
    private readonly deps: PoolDependencies,
  ) {
    this.prepared = new PreparedRegistry(settings.preparedStatementCacheSize);
    this.budget = deps.budget?.(this);
    this.watch = new ServerWatch({
      clock: deps.clock,
      hosts: deps.hosts,
      outageWaitMs: () => deps.outageWaitMs?.() ?? 0,
      tell: (e) => deps.upstream?.(this, e),
      ...(deps.random !== undefined ? { random: deps.random } : {}),
      limitChanged: () => this.waits.rearm(),
      retry: () => {
        this.refill();
        // No client waits, but min_size wants connections: one login asks for them.
        if (this.watch.down && this.opener.connecting === 0 && this.size < this.settings.minPoolSize) this.opener.spawn(false);
      },
      giveUpParameters: (e) => this.params.settle(e),
    });
    this.waits = new WaitQueue(deps.clock, () => this.watch.waitLimitMs(this.settings.queryWaitTimeoutMs), (ms) => this.watch.waitEndedError(ms));
    // Another worker may know them already; else the first connection is opened (also while
    // PAUSEd: a login is not a transaction).
    this.params = new ServerParameters(() => {
      this.budget?.askParameters();
      this.refill();
    });
    this.opener = new Opener({
      clock: deps.clock, batcher: deps.batcher, connect: () => deps.connect(login), budget: this.budget, watch: this.watch, params: this.params, totals: this.totals,
      lists: this.lists, waits: this.waits, closed: () => this.closed, opened: (b) => this.opened(b),
      onResetDone: (x) => this.resetDone(x), onClosed: (x, r) => this.onClosed(x, r), onRoleChanged: (x) => this.roleChanged(x),
    });
    this.maintenance = new Maintenance({
      settings, budget: this.budget, idle: this.lists.idle, size: () => this.size, connecting: () => this.opener.connecting, serverDown: () => this.watch.down, parametersWanted: () => this.params.wanted,
      expired: (b, now) => this.expired(b, now), close: (b) => this.destroy(b), openForMin: () => this.opener.spawn(false), refill: () => this.refill(),
    });
    // The least recently used idle connection may go, unless clients of the pool wait (or it is closed).
    const candidate = (): Backend | undefined => (this.closed || (this.waits.size > 0 && !this.paused) ? undefined : this.lists.idle[0]);
    this.giving = new IdleGiving({ clock: deps.clock, candidate, othersWant: () => this.budget?.othersWant() === true, giveAway: (b) => this.giveAway(b) });
    this.stopMaintenance = every(deps.clock, 1000, () => this.maintain());
    this.maintain();
  }

  /** A reload: the new settings apply from now on (the object is read several times per transaction). */
  updateSettings(next: PoolSettings): void {
    Object.assign(this.settings, next);
    this.prepared.setLimit(next.preparedStatementCacheSize);
  }

  /** Every server connection of the pool, for SHOW SERVERS (the core adds its worker). */
  serverRows(): Omit<ServerRow, 'worker'>[] {
    return serverRows(this.database, this.user, this.lists, this.deps.hosts);
  }

  get isPaused(): boolean {
    return this.paused;
  }

  /** PAUSE: clients that need a backend wait (counted, with their wait timeout); running transactions finish. */
  pause(): void {
    this.paused = true;
  }

  /** RESUME: the waiters are served again, oldest first. */
  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    for (let b = this.lists.lastIdle(); b !== undefined && this.waits.size > 0; b = this.lists.lastIdle()) this.handOver(b, true);
    this.refill();
  }

  /** True once a backend logged in (the pool's database and user are real). */
  get hasConnected(): boolean {
    return this.params.known !== undefined;
  }

  get size(): number {
    return this.lists.count + this.opener.connecting;
  }

  stats(): PoolStats {
    const state = { paused: this.paused, connecting: this.opener.connecting, serverDown: this.watch.down, hosts: this.deps.hosts, now: this.deps.clock.now() };
    return poolStats(this.lists, this.waits, this.totals, state);
  }

  /** A client's traffic since it last reported (its driver reports once per transaction and at close). */
  addTraffic(queries: number, queryTimeUs: number, receivedBytes: number, sentBytes: number, plainXacts: number): void {
    this.totals.traffic(queries, queryTimeUs, receivedBytes, sentBytes, plainXacts);
  }

  /** The real server's reported parameters, from this pool's first backend (cached). */
  parameters(): Promise<ReadonlyMap<string, string>> {
    return this.params.get();
  }

  get knownParameters(): ReadonlyMap<string, string> | undefined {
    return this.params.known;
  }

  /** Another worker told them. */
  learnParameters(values: ReadonlyMap<string, string>): void {
    this.params.learn(values);
  }

  get poolSize(): number {
    return this.settings.poolSize;
  }

  acquire(w: Waiter): void {
    if (this.closed) return w.onError(fatal(SQLSTATE.ADMIN_SHUTDOWN, 'the pool is shutting down'));
    const now = this.deps.clock.now();
    if (this.paused) return this.waits.add(w, now);
    // The most recently used idle backend stays in the list until lists.move moves it (found at the end: O(1)).
    let b = this.lists.lastIdle();
    // Past its lifetime: closed now rather than reused until the next maintenance tick.
    for (; b !== undefined && this.expired(b, now); b = this.lists.lastIdle()) this.destroy(b);
    if (b !== undefined && !this.needsCheck(b, now)) {
      this.lists.move(b, 'active');
      return this.deliver(w, b, now, 0);
    }
    this.waits.add(w, now);
    if (b !== undefined) this.check(b);
    else this.refill();
  }

  /** Gives an 'active' backend to a waiter (served at once or after waiting `waitMs`). */
  private deliver(w: Waiter, b: Backend, now: number, waitMs: number): void {
    b.link = new Link(w, now, waitMs);
    w.onBackend(b);
  }

  private needsCheck(b: Backend, now: number): boolean {
    return now - b.lastUsedAt >= this.settings.serverCheckDelayMs || this.watch.suspect(b.lastUsedAt);
  }

  /** Runs the health check; when it answers the backend goes to the longest waiter (or back to idle). */
  private check(b: Backend): void {
    this.lists.move(b, 'resetting');
    b.resetPending = 1;
    b.resetFailed = false;
    b.writeNow(encodeQuery(this.settings.serverCheckQuery));
  }

  /** The waiter no longer wants a backend (its client left). */
  withdraw(w: Waiter): void {
    this.waits.delete(w);
    if (this.waits.size === 0) this.budget?.satisfied();
  }

  /** A client gives a backend back; what it needs before reuse follows from the facts. */
  release(b: Backend, facts: ReleaseFacts): void {
    if (b.state !== 'active') return;
    const now = this.deps.clock.now();
    this.served(b, now);
    b.lastUsedAt = now;
    if (facts.busy || this.closed || this.expired(b, now) || b.unsuitable) return this.destroy(b);
    const rollback = facts.status !== 'I';
    const reset = facts.dirty || this.settings.poolMode === 'session';
    if (!rollback && !reset) return this.handOver(b); // the common case: nothing to run, nothing allocated
    this.lists.move(b, 'resetting');
    b.resetPending = (rollback ? 1 : 0) + (reset ? 1 : 0);
    b.resetFailed = false;
    // Separate Query messages: DISCARD ALL cannot run inside the implicit transaction of a multi-statement query.
    if (rollback) b.writeNow(encodeQuery('ROLLBACK'));
    if (reset) {
      b.writeNow(encodeQuery(this.settings.serverResetQuery));
      // What the reset query left of the parameters the server does not report is not known.
      b.sessionState.settingsReset();
    }
  }

  /** The link of `b` ends: count the transaction (and tell whoever listens). */
  private served(b: Backend, now: number): void {
    const link = b.link;
    if (link === null) return;
    b.link = null;
    const xactMs = now - link.since;
    this.totals.transaction(xactMs, link.waitMs);
    this.deps.served?.(this, link.client, link.waitMs, xactMs);
  }

  /** Closes idle backends now; active ones are closed as they are released. */
  close(): void {
    this.closed = true;
    this.stopMaintenance();
    this.giving.stop();
    this.waits.stop();
    this.watch.stop();
    this.budget?.close();
    for (const w of this.waits.takeAll()) {
      w.onError(fatal(SQLSTATE.ADMIN_SHUTDOWN, 'terminating connection due to administrator command'));
    }
    for (const b of [...this.lists.idle, ...this.lists.resetting]) this.destroy(b);
  }

  /** Forcibly closes every backend (immediate shutdown). */
  destroyAll(): void {
    this.close();
    for (const b of [...this.lists.active]) this.destroy(b);
  }

  /** A free backend goes to the longest waiter (unless PAUSEd), else to the idle list. */
  private handOver(b: Backend, fromIdle = false): void {
    if (this.closed) return this.destroy(b);
    // Another worker waits for this pool's budget: this one goes back to it (see workers/budgets.ts).
    if (this.budget?.shouldGive() === true) return this.giveAway(b);
    if (this.waits.size > 0 && !this.paused) {
      // Inside a read cycle this is the release's own reading (the pooler's clock is a CycleClock).
      const now = this.deps.clock.now();
      const waitedMs = now - this.waits.oldestSince();
      const next = this.waits.shift()!;
      if (this.waits.size === 0) this.budget?.satisfied();
      this.lists.move(b, 'active');
      return this.deliver(next, b, now, waitedMs);
    }
    // A new backend is born 'idle' in no list; lists.move puts it in (and never twice).
    if (!fromIdle) this.lists.move(b, 'idle');
    // Another worker waits: once idle long enough, this one (or another idle one) goes to it.
    if (this.budget?.othersWant() === true) this.giving.offer();
  }

  /** A server reported a new role (PostgreSQL 14+: a standby promoted): see role-change.ts. */
  private roleChanged(b: Backend): void {
    const hosts = this.deps.hosts;
    if (hosts === undefined) return;
    // Other pools' idle connections there have not heard yet (a server reports at ReadyForQuery).
    this.deps.serverRoleChanged?.(b.server);
    leaveIfUnsuitable(b, hosts, this.lists, (e) => this.deps.upstream?.(this, e));
  }

  /** `server` changed role: idle connections to it close (new logins there learn what it is now). */
  dropIdleOf(server: ServerAddress): void {
    for (const x of [...this.lists.idle]) if (sameServer(x.server, server)) this.destroy(x);
  }

  private resetDone(b: Backend): void {
    if (b.state !== 'resetting') return;
    if (b.resetFailed || b.unsuitable) return this.destroy(b);
    b.lastUsedAt = this.deps.clock.now();
    this.handOver(b);
  }

  private onClosed(b: Backend, reason: string): void {
    if (b.state === 'closed') return;
    this.watch.connectionLost();
    const client = b.state === 'active' ? (b.link?.client ?? null) : null;
    if (b.state === 'active') this.served(b, this.deps.clock.now());
    this.lists.move(b, 'closed');
    b.destroy();
    client?.onBackendLost(reason);
    this.refill();
  }

  /**
   * Closes `b`. `replace`: another is opened for whoever waits. Not when its budget goes to another
   * worker (`giveAway`): then it is closed once the server is done with it, and not replaced here.
   */
  private destroy(b: Backend, how: 'replace' | 'giveAway' = 'replace'): void {
    if (b.state === 'closed') return;
    if (b.state === 'active') this.served(b, this.deps.clock.now());
    this.lists.move(b, 'closed');
    if (how === 'giveAway') return b.closeWhenServerDone();
    b.close();
    this.refill();
  }

  private giveAway(b: Backend): void {
    this.destroy(b, 'giveAway');
  }

  /** Opens the connections waiters (and a login's first parameters) need, as far as limits allow. */
  refill(): void {
    if (this.closed) return;
    const demand = (this.paused ? 0 : this.waits.size) + (this.params.wanted ? 1 : 0);
    const connecting = this.opener.connecting;
    let need = Math.min(demand - connecting, this.settings.poolSize - this.size, this.settings.maxLoginsInProgress - connecting);
    // During an outage one login at a time asks whether the server is back, after its backoff.
    if (this.watch.down) need = this.watch.retrying ? 0 : Math.min(need, 1 - connecting);
    for (; need > 0; need--) if (!this.opener.spawn()) return;
    if (demand === 0) this.budget?.satisfied();
  }

  /** A login ended with a new connection: it serves a waiter, and the next login (if one is needed) may start. */
  private opened(b: Backend): void {
    this.handOver(b);
    this.refill();
    this.maintenance.topUp();
  }

  /** Another worker waits for this pool's budget: an idle connection may go to it (see idle-giving.ts). */
  giveIdle(): boolean {
    return this.giving.offer();
  }

  private expired(b: Backend, now: number): boolean {
    return this.settings.serverLifetimeMs > 0 && now - b.createdAt >= this.settings.serverLifetimeMs;
  }

  /** Periodic (every second): see maintenance.ts. */
  maintain(): void {
    if (!this.closed) this.maintenance.run(this.deps.clock.now());
  }
}

const encodeQuery = (query: string): Buffer => encodeFrontend({ type: 'Query', query });
