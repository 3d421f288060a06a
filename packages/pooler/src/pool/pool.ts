// The backends of one (database, user) pair. Every backend sits in exactly one of the lists
// below, matching its state, and moves only through lists.move. Clients that cannot get a backend
// wait in a FIFO queue with a deadline (queryWaitTimeoutMs). PAUSE is a state of the pool (as in
// PgBouncer): waiters queue, nothing is handed out until resume(). The pool measures what it
// serves (wait and transaction times, with the pooler's clock) and keeps every count of its own.
// While the server cannot be reached for a reason that passes (a restart, a failover), clients
// wait here as for a full pool, and one login at a time retries with backoff (server-watch.ts).
import { encodeFrontend, SQLSTATE } from '@quicpool/wire';
import type { PoolSettings } from '../config/pool-settings.js';
import { Backend } from '../backend/backend.js';
import { Link } from '../backend/link.js';
import type { Waiter } from '../backend/link.js';
import type { BackendLogin } from '../backend/connect.js';
import { describeServer, sameServer } from '../backend/dial.js';
import type { ServerAddress } from '../backend/dial.js';
import { fatal } from '../backend/login.js';
import type { Timer } from '../runtime/clock.js';
import { every } from '../runtime/clock.js';
import { PreparedRegistry } from '../prepared/registry.js';
import type { ReleaseFacts, ServerRow } from './types.js';
import type { BudgetedPool, ServerBudget } from '../workers/budgets.js';
import { BackendLists } from './backend-lists.js';
import { ServerParameters } from './server-parameters.js';
import { loginError, ServerWatch } from './server-watch.js';
import type { PoolDependencies, PoolStats } from './types.js';
import { PoolTotals } from './totals.js';
import { WaitQueue } from './wait-queue.js';

export type { Waiter } from '../backend/link.js';
export type { PoolDependencies, PoolStats, PoolUpstreamEvent, ReleaseFacts, ServerRow, ServerState, TransactionServed } from './types.js';

export class Pool implements BudgetedPool {
  /** Its server connections, each in the list of its state. */
  private readonly lists = new BackendLists();
  private connecting = 0;
  /** Clients waiting for a server connection (PAUSE, a full pool, the server down). */
  private readonly waits: WaitQueue;
  /** A peer wants this pool's connections and the least recently used one is not idle long enough yet. */
  private giveTimer: Timer | null = null;
  /** The server's parameters, which logins wait for (the pool's first server connection tells them). */
  private readonly params: ServerParameters;
  private readonly budget: ServerBudget | undefined;
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
    private readonly login: BackendLogin,
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
        if (this.watch.down && this.connecting === 0 && this.size < this.settings.minPoolSize) this.spawn(false);
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
    const row = (b: Backend, state: ServerRow['state']): Omit<ServerRow, 'worker'> => ({
      database: this.database, user: this.user, state, info: b.stream.info, connectedAt: b.connectedAtWall, processId: b.processId, host: this.deps.hosts === undefined ? '' : describeServer(b.server),
    });
    return [...this.lists.idle.map((b) => row(b, 'idle')), ...[...this.lists.active].map((b) => row(b, 'active')), ...[...this.lists.resetting].map((b) => row(b, 'resetting'))];
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
    return this.lists.count + this.connecting;
  }

  stats(): PoolStats {
    return {
      paused: this.paused,
      idle: this.lists.idle.length,
      active: this.lists.active.size,
      resetting: this.lists.resetting.size,
      connecting: this.connecting,
      waiting: this.waits.size,
      connectsTotal: this.totals.connects,
      closedTotal: this.lists.closedTotal,
      waitTimeoutsTotal: this.waits.timeoutsTotal,
      maxWaitMs: this.waits.maxWaitMs(this.deps.clock.now()),
      xactCountTotal: this.totals.xactCount,
      xactTimeMsTotal: this.totals.xactTimeMs,
      waitTimeMsTotal: this.totals.waitTimeMs,
      queryCountTotal: this.totals.queryCount,
      queryTimeUsTotal: Math.round(this.totals.queryTimeUs),
      receivedBytesTotal: this.totals.receivedBytes,
      sentBytesTotal: this.totals.sentBytes,
      serverHost: this.deps.hosts === undefined ? '' : describeServer(this.deps.hosts.host),
      serverDown: this.watch.down,
    };
  }

  /** A client's traffic since it last reported (its driver reports once per transaction and at close). */
  addTraffic(queries: number, queryTimeUs: number, receivedBytes: number, sentBytes: number): void {
    this.totals.traffic(queries, queryTimeUs, receivedBytes, sentBytes);
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

  /** True while `w` is queued for a backend (not served, withdrawn or failed yet). */
  isWaiting(w: Waiter): boolean {
    return this.waits.has(w);
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
    this.deps.served?.(this, { waiter: link.client, waitMs: link.waitMs, xactMs });
  }

  /** Closes idle backends now; active ones are closed as they are released. */
  close(): void {
    this.closed = true;
    this.stopMaintenance();
    if (this.giveTimer !== null) this.deps.clock.clearTimer(this.giveTimer);
    this.giveTimer = null;
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
      const next = this.waits.shift(now)!;
      if (this.waits.size === 0) this.budget?.satisfied();
      this.lists.move(b, 'active');
      return this.deliver(next.waiter, b, now, next.waitedMs);
    }
    // A new backend is born 'idle' in no list; lists.move puts it in (and never twice).
    if (!fromIdle) this.lists.move(b, 'idle');
    // Another worker waits: once idle long enough, this one (or another idle one) goes to it.
    if (this.budget?.othersWant() === true) this.giveIdle();
  }

  private open(): Promise<Backend> {
    this.connecting++;
    this.totals.connects++;
    const budget = this.budget;
    return this.deps.connect(this.login).then(
      (c) => {
        this.connecting--;
        this.watch.loggedIn(c.server);
        const parameters = new Map(c.parameters);
        if (this.params.learn(parameters)) this.budget?.tellParameters(parameters);
        const b = new Backend(c, this.deps.clock, this.deps.batcher, {
          onResetDone: (x) => this.resetDone(x),
          onClosed: (x, r) => this.onClosed(x, r),
          onRoleChanged: (x) => this.roleChanged(x),
          // The budget comes back once the server has closed its end: never two at once for one unit.
          ...(budget !== undefined ? { onGone: (x: Backend) => budget.give(x.closeReserved) } : {}),
        });
        // Born 'idle' but in no list yet: handOver places it.
        return b;
      },
      (e: unknown) => {
        this.connecting--;
        budget?.give(false);
        throw e;
      },
    );
  }

  /**
   * Opens one more server connection; false when the server budget refused it (then, for
   * `waiters`, the pool asks the other workers for one; min_size alone never does).
   */
  private spawn(forWaiters = true): boolean {
    if (this.budget !== undefined) {
      const taken = this.budget.take();
      if (taken !== 'ok') {
        if (forWaiters) this.budget.want(taken);
        return false;
      }
    }
    this.open().then(
      (b) => this.handOver(b),
      (e: unknown) => {
        if (this.watch.loginFailed(e, this.closed)) return; // the clients wait; a retry is planned
        // Waiters that no backend in use will ever reach get the server's error now.
        if (this.lists.active.size + this.lists.resetting.size + this.connecting > 0) return;
        this.failWaiters(e);
      },
    );
    return true;
  }

  /** Every waiter (and login waiting for parameters) gets the server's error. */
  private failWaiters(e: unknown): void {
    const error = loginError(e);
    this.params.settle(e);
    for (const w of this.waits.takeAll()) w.onError(error);
  }

  /**
   * A server reported a new role (PostgreSQL 14+: a standby promoted). When it no longer suits
   * the pool, its idle connections close, busy ones close as they come back, and the next login
   * tries the other hosts first.
   */
  private roleChanged(b: Backend): void {
    const hosts = this.deps.hosts;
    if (hosts === undefined) return;
    // Other pools' idle connections there have not heard yet (a server reports at ReadyForQuery).
    this.deps.serverRoleChanged?.(b.server);
    if (hosts.suits(b)) return;
    const server = describeServer(b.server);
    hosts.leave(b.server);
    this.deps.upstream?.(this, { type: 'hostChanged', from: server, to: describeServer(hosts.host), why: `${server} is no longer ${hosts.attrs()}` });
    for (const x of [...this.lists.active, ...this.lists.resetting]) if (sameServer(x.server, b.server)) x.unsuitable = true;
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
    let need = Math.min(demand - this.connecting, this.settings.poolSize - this.size);
    // During an outage one login at a time asks whether the server is back, after its backoff.
    if (this.watch.down) need = this.watch.retrying ? 0 : Math.min(need, 1 - this.connecting);
    for (; need > 0; need--) if (!this.spawn()) return;
    if (demand === 0) this.budget?.satisfied();
  }

  /**
   * Another worker waits for this pool's budget: a connection idle for IDLE_BEFORE_GIVING_MS goes
   * to it, if no client here waits. One idle for less is likely between two of its clients'
   * transactions (given away, it would come straight back as a new server login): it is looked at
   * again once it has been idle that long (on the pooler's clock).
   */
  giveIdle(): boolean {
    const b = this.lists.idle[0]; // the least recently used
    if (b === undefined || this.closed || (this.waits.size > 0 && !this.paused)) return false;
    const young = b.lastUsedAt + IDLE_BEFORE_GIVING_MS - this.deps.clock.now();
    if (young > 0) {
      this.giveTimer ??= this.deps.clock.setTimer(() => {
        this.giveTimer = null;
        if (this.budget?.othersWant() === true) this.giveIdle();
      }, young);
      return false;
    }
    this.giveAway(b);
    return true;
  }

  /** Closing idle `b` keeps min_size connections (in the daemon, with several workers). */
  private mayCloseIdle(b: Backend, min: number): boolean {
    if (this.budget === undefined) return this.size > min;
    b.closeReserved = this.budget.reserveClose(min);
    return b.closeReserved;
  }

  private expired(b: Backend, now: number): boolean {
    return this.settings.serverLifetimeMs > 0 && now - b.createdAt >= this.settings.serverLifetimeMs;
  }

  /**
   * Periodic (every second): close idle backends past their idle timeout or lifetime, keep
   * minPoolSize open (counted over the daemon's workers when there are several).
   */
  maintain(): void {
    if (this.closed) return;
    const now = this.deps.clock.now();
    const idleLimit = this.settings.serverIdleTimeoutMs;
    const min = this.settings.minPoolSize;
    for (const b of [...this.lists.idle]) {
      if (this.expired(b, now)) this.destroy(b);
      else if (idleLimit > 0 && now - b.lastUsedAt >= idleLimit && this.mayCloseIdle(b, min)) this.destroy(b);
    }
    // During an outage the retry timer's one login asks whether the server is back (see refill).
    if (!this.watch.down) for (let n = min - (this.budget?.daemonServers() ?? this.size); n > 0; n--) if (!this.spawn(false)) break;
    // The budget's backstop: a pool still refused asks again, in case its last request found no one.
    this.budget?.remind();
    if (this.params.wanted) this.budget?.askParameters();
    this.refill();
  }
}

const encodeQuery = (query: string): Buffer => encodeFrontend({ type: 'Query', query });

/** How long a connection must have been idle before it goes to another worker that wants one. */
export const IDLE_BEFORE_GIVING_MS = 50;
