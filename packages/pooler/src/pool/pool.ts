// The backends of one (database, user) pair. Every backend sits in exactly one of the lists
// below, matching its state, and moves only through setState. Clients that cannot get a backend
// wait in a FIFO queue with a deadline (queryWaitTimeoutMs). PAUSE is a state of the pool (as in
// PgBouncer): waiters queue, nothing is handed out until resume(). The pool measures what it
// serves (wait and transaction times, with the pooler's clock) and keeps every count of its own.
// While the server cannot be reached for a reason that passes (a restart, a failover), clients
// wait here as for a full pool, and one login at a time retries with backoff (upstream/outage.ts).
import { encodeFrontend, SQLSTATE } from '@quicpool/wire';
import type { PoolSettings } from '../config/pool-settings.js';
import { Backend } from '../backend/backend.js';
import type { BackendState, Waiter } from '../backend/backend.js';
import { BackendLoginError } from '../backend/connect.js';
import { fatal } from '../backend/login.js';
import type { BackendConnection, BackendLogin } from '../backend/connect.js';
import type { Clock, Timer } from '../core/clock.js';
import { every } from '../core/clock.js';
import type { WriteBatcher } from '../core/write-batcher.js';
import { PreparedRegistry } from '../prepared/registry.js';
import type { ReleaseFacts } from '../session/types.js';
import type { ServerRow } from '../core/view.js';
import type { BudgetedPool, ServerBudget } from '../workers/budgets.js';
import type { ServerAddress } from '../backend/dial.js';
import { describeServer, sameServer } from '../backend/dial.js';
import { loginFailurePasses, loginFailureReason } from '../upstream/login-failure.js';
import { Outage } from '../upstream/outage.js';
import type { HostChoice } from '../upstream/host-choice.js';

export type { Waiter } from '../backend/backend.js';

export interface PoolStats {
  /** PAUSEd: waiters queue, no backend is handed out. */
  readonly paused: boolean;
  readonly idle: number;
  readonly active: number;
  readonly resetting: number;
  readonly connecting: number;
  readonly waiting: number;
  readonly connectsTotal: number;
  readonly closedTotal: number;
  readonly waitTimeoutsTotal: number;
  /** How long the longest waiting client has waited so far (ms; 0 when none waits). */
  readonly maxWaitMs: number;
  /** Backends handed to clients (one per transaction in transaction pooling), and the time they were held (ms). */
  readonly xactCountTotal: number;
  readonly xactTimeMsTotal: number;
  /** Of those handed out, the time clients waited for them (ms; 0 for one served at once). */
  readonly waitTimeMsTotal: number;
  /** Requests (Query, Sync, FunctionCall) answered with ReadyForQuery, since the pool was made. */
  readonly queryCountTotal: number;
  /** Time those requests ran (from the first request of a batch out to the ReadyForQuery that ends it), µs. */
  readonly queryTimeUsTotal: number;
  /** Bytes received from and sent to this pool's clients. */
  readonly receivedBytesTotal: number;
  readonly sentBytesTotal: number;
  /** The server host the pool logs in to ("host:port" or a socket path; '' for a virtual database). */
  readonly serverHost: string;
  /** Logins fail for a reason that passes (restart, failover): clients wait (see upstream/outage.ts). */
  readonly serverDown: boolean;
}

/** What the pool tells about its server (the core adds the pool's database and user). */
export type PoolUpstreamEvent =
  /** A login failed; `passes`: for a reason that passes (clients wait). */
  | { readonly type: 'loginFailed'; readonly server: string; readonly reason: string; readonly message: string; readonly passes: boolean }
  /** The first failed login of an outage. */
  | { readonly type: 'serverDown'; readonly server: string; readonly reason: string; readonly message: string }
  /** Logins succeed again after an outage of `outageMs`. */
  | { readonly type: 'serverUp'; readonly server: string; readonly outageMs: number }
  /** The pool logs in to another host now (target_session_attrs, failover). */
  | { readonly type: 'hostChanged'; readonly from: string; readonly to: string; readonly why: string };

/** One backend handed to a client and given back: what it cost. */
export interface TransactionServed {
  readonly waiter: Waiter;
  /** Time the client waited for the backend (ms). */
  readonly waitMs: number;
  /** Time the client held it (ms). */
  readonly xactMs: number;
}

export interface PoolDependencies {
  readonly clock: Clock;
  readonly connect: (login: BackendLogin) => Promise<BackendConnection>;
  /** The pooler's write batcher: every backend's writer collects through it. */
  readonly batcher: WriteBatcher;
  /** A backend came back from its client (for metrics); absent: nobody listens. */
  readonly served?: (pool: Pool, t: TransactionServed) => void;
  /**
   * The daemon-wide server budget (several workers, or a daemon-wide limit), made for this pool;
   * absent: the pool alone counts its connections against poolSize.
   */
  readonly budget?: (pool: BudgetedPool) => ServerBudget;
  /** The hosts the pool may log in to (absent for a virtual database): the one in use, and whether a server still suits. */
  readonly hosts?: HostChoice;
  /** Longest a client waits for a server that is down (ms; 0: fail at once). Read at each use (RELOAD). */
  readonly outageWaitMs?: () => number;
  readonly upstream?: (pool: Pool, e: PoolUpstreamEvent) => void;
  /** A server connection of this pool reported a new role for `server`: every pool drops its idle ones there. */
  readonly serverRoleChanged?: (server: ServerAddress) => void;
  /** Jitter of the login retries (tests pass a fixed one). */
  readonly random?: () => number;
}

export class Pool implements BudgetedPool {
  /** Idle backends, most recently used last (LIFO reuse keeps the working set warm). */
  private readonly idle: Backend[] = [];
  private readonly active = new Set<Backend>();
  private readonly resetting = new Set<Backend>();
  private connecting = 0;
  /**
   * Waiters in arrival order, each with its arrival time (clock ms). Every waiter of a pool has
   * the same timeout, so arrival order is deadline order and one timer, aimed at the oldest
   * waiter, serves them all (no timer per wait). A client served at once never enters it.
   */
  private readonly waiters = new Map<Waiter, number>();
  private waitTimer: Timer | null = null;
  /** A peer wants this pool's connections and the least recently used one is not idle long enough yet. */
  private giveTimer: Timer | null = null;
  private parametersCache: ReadonlyMap<string, string> | undefined;
  private parametersPromise: Promise<ReadonlyMap<string, string>> | undefined;
  /** Logins waiting for the server's parameters: the pool's first server connection. */
  private parameterWaiters: { resolve(p: ReadonlyMap<string, string>): void; reject(e: unknown): void }[] = [];
  private readonly budget: ServerBudget | undefined;
  private readonly stopMaintenance: () => void;
  private readonly outage: Outage;
  /** The next login of an outage (one at a time, after a backoff). */
  private retryTimer: Timer | null = null;
  /** Idle backends last used before this (clock ms) may have died with the server: checked before reuse. */
  private suspectBefore = -Infinity;
  private closed = false;
  private paused = false;
  private xactCountTotal = 0;
  private xactTimeMsTotal = 0;
  private waitTimeMsTotal = 0;
  private connectsTotal = 0;
  private closedTotal = 0;
  private waitTimeoutsTotal = 0;
  private queryCountTotal = 0;
  private queryTimeUsTotal = 0;
  private receivedBytesTotal = 0;
  private sentBytesTotal = 0;
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
    this.outage = new Outage(deps.random);
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
    return [...this.idle.map((b) => row(b, 'idle')), ...[...this.active].map((b) => row(b, 'active')), ...[...this.resetting].map((b) => row(b, 'resetting'))];
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
    for (let b = this.lastIdle(); b !== undefined && this.waiters.size > 0; b = this.lastIdle()) this.handOver(b, true);
    this.refill();
  }

  /** True once a backend logged in (the pool's database and user are real). */
  get hasConnected(): boolean {
    return this.parametersCache !== undefined;
  }

  get size(): number {
    return this.idle.length + this.active.size + this.resetting.size + this.connecting;
  }

  stats(): PoolStats {
    const oldest = this.waiters.values().next();
    return {
      paused: this.paused,
      idle: this.idle.length,
      active: this.active.size,
      resetting: this.resetting.size,
      connecting: this.connecting,
      waiting: this.waiters.size,
      connectsTotal: this.connectsTotal,
      closedTotal: this.closedTotal,
      waitTimeoutsTotal: this.waitTimeoutsTotal,
      maxWaitMs: oldest.done === true ? 0 : this.deps.clock.now() - oldest.value,
      xactCountTotal: this.xactCountTotal,
      xactTimeMsTotal: this.xactTimeMsTotal,
      waitTimeMsTotal: this.waitTimeMsTotal,
      queryCountTotal: this.queryCountTotal,
      queryTimeUsTotal: Math.round(this.queryTimeUsTotal),
      receivedBytesTotal: this.receivedBytesTotal,
      sentBytesTotal: this.sentBytesTotal,
      serverHost: this.deps.hosts === undefined ? '' : describeServer(this.deps.hosts.host),
      serverDown: this.outage.active,
    };
  }

  /** A client's traffic since it last reported (its driver reports once per transaction and at close). */
  addTraffic(queries: number, queryTimeUs: number, receivedBytes: number, sentBytes: number): void {
    this.queryCountTotal += queries;
    this.queryTimeUsTotal += queryTimeUs;
    this.receivedBytesTotal += receivedBytes;
    this.sentBytesTotal += sentBytes;
  }

  /** The real server's reported parameters, from this pool's first backend (cached). */
  parameters(): Promise<ReadonlyMap<string, string>> {
    if (this.parametersCache !== undefined) return Promise.resolve(this.parametersCache);
    this.parametersPromise ??= new Promise<ReadonlyMap<string, string>>((resolve, reject) => {
      this.parameterWaiters.push({ resolve, reject });
      // Another worker may know them already; else the first connection is opened (also while
      // PAUSEd: a login is not a transaction).
      this.budget?.askParameters();
      this.refill();
    });
    return this.parametersPromise;
  }

  get knownParameters(): ReadonlyMap<string, string> | undefined {
    return this.parametersCache;
  }

  learnParameters(values: ReadonlyMap<string, string>): void {
    if (this.parametersCache !== undefined) return;
    this.parametersCache = values;
    this.settleParameters();
  }

  /** The first server connection told its parameters (or none could be opened): the logins go on. */
  private settleParameters(error?: unknown): void {
    const w = this.parameterWaiters;
    if (w.length === 0) return;
    this.parameterWaiters = [];
    this.parametersPromise = undefined;
    for (const x of w) {
      if (this.parametersCache !== undefined) x.resolve(this.parametersCache);
      else x.reject(error);
    }
  }

  get poolSize(): number {
    return this.settings.poolSize;
  }

  acquire(w: Waiter): void {
    if (this.closed) return w.onError(fatal(SQLSTATE.ADMIN_SHUTDOWN, 'the pool is shutting down'));
    const now = this.deps.clock.now();
    if (this.paused) return this.enqueue(w, now);
    // The most recently used idle backend stays in the list until setState moves it (found at the end: O(1)).
    let b = this.lastIdle();
    // Past its lifetime: closed now rather than reused until the next maintenance tick.
    for (; b !== undefined && this.expired(b, now); b = this.lastIdle()) this.destroy(b);
    if (b !== undefined && !this.needsCheck(b, now)) {
      this.setState(b, 'active');
      return this.deliver(w, b, now, 0);
    }
    this.enqueue(w, now);
    if (b !== undefined) this.check(b);
    else this.refill();
  }

  private enqueue(w: Waiter, now: number): void {
    this.waiters.set(w, now);
    if (this.settings.queryWaitTimeoutMs > 0) this.armWaitTimer();
  }

  /** Idle long enough that it may have died quietly (server restart, network): check before reuse. */
  private lastIdle(): Backend | undefined {
    const n = this.idle.length;
    return n === 0 ? undefined : this.idle[n - 1];
  }

  /** True while `w` is queued for a backend (not served, withdrawn or failed yet). */
  isWaiting(w: Waiter): boolean {
    return this.waiters.has(w);
  }

  /** Gives an 'active' backend to a waiter (served at once or after waiting `waitMs`). */
  private deliver(w: Waiter, b: Backend, now: number, waitMs: number): void {
    b.holder = w;
    b.assignedAt = now;
    b.waitMs = waitMs;
    w.onBackend(b);
  }

  private needsCheck(b: Backend, now: number): boolean {
    return now - b.lastUsedAt >= this.settings.serverCheckDelayMs || b.lastUsedAt < this.suspectBefore;
  }

  /** Runs the health check; when it answers the backend goes to the longest waiter (or back to idle). */
  private check(b: Backend): void {
    this.setState(b, 'resetting');
    b.resetPending = 1;
    b.resetFailed = false;
    b.writeNow(encodeQuery(this.settings.serverCheckQuery));
  }

  /** The waiter no longer wants a backend (its client left). */
  withdraw(w: Waiter): void {
    this.waiters.delete(w); // the shared timer re-aims itself when it fires
    if (this.waiters.size === 0) this.budget?.satisfied();
  }

  /** A client gives a backend back; what it needs before reuse follows from the facts. */
  release(b: Backend, facts: ReleaseFacts): void {
    if (b.state !== 'active') return;
    b.owner = null;
    const now = this.deps.clock.now();
    this.served(b, now);
    b.lastUsedAt = now;
    if (facts.busy || this.closed || this.expired(b, now) || b.unsuitable) return this.destroy(b);
    const rollback = facts.status !== 'I';
    const reset = facts.dirty || this.settings.poolMode === 'session';
    if (!rollback && !reset) return this.handOver(b); // the common case: nothing to run, nothing allocated
    this.setState(b, 'resetting');
    b.resetPending = (rollback ? 1 : 0) + (reset ? 1 : 0);
    b.resetFailed = false;
    // Separate Query messages: DISCARD ALL cannot run inside the implicit transaction of a multi-statement query.
    if (rollback) b.writeNow(encodeQuery('ROLLBACK'));
    if (reset) {
      b.writeNow(encodeQuery(this.settings.serverResetQuery));
      // What the reset query left of the parameters the server does not report is not known.
      b.unreported.known = false;
      b.trackedMatch.version = -1;
    }
  }

  /** The holder of `b` is done with it: count the transaction (and tell whoever listens). */
  private served(b: Backend, now: number): void {
    const holder = b.holder;
    if (holder === null) return;
    b.holder = null;
    const xactMs = now - b.assignedAt;
    this.xactCountTotal++;
    this.xactTimeMsTotal += xactMs;
    this.waitTimeMsTotal += b.waitMs;
    this.deps.served?.(this, { waiter: holder, waitMs: b.waitMs, xactMs });
  }

  /** Closes idle backends now; active ones are closed as they are released. */
  close(): void {
    this.closed = true;
    this.stopMaintenance();
    if (this.giveTimer !== null) this.deps.clock.clearTimer(this.giveTimer);
    this.giveTimer = null;
    if (this.waitTimer !== null) this.deps.clock.clearTimer(this.waitTimer);
    this.waitTimer = null;
    if (this.retryTimer !== null) this.deps.clock.clearTimer(this.retryTimer);
    this.retryTimer = null;
    this.budget?.close();
    const waiting = [...this.waiters.keys()];
    this.waiters.clear();
    for (const w of waiting) {
      w.onError(fatal(SQLSTATE.ADMIN_SHUTDOWN, 'terminating connection due to administrator command'));
    }
    for (const b of [...this.idle, ...this.resetting]) this.destroy(b);
  }

  /** Forcibly closes every backend (immediate shutdown). */
  destroyAll(): void {
    this.close();
    for (const b of [...this.active]) this.destroy(b);
  }

  /** The one place a backend changes state: it leaves its old list and joins the new one. */
  private setState(b: Backend, state: BackendState): void {
    switch (b.state) {
      case 'idle': {
        // LIFO: the backend taken is nearly always the last one.
        const last = this.idle.length - 1;
        if (last >= 0 && this.idle[last] === b) this.idle.pop();
        else {
          const i = this.idle.lastIndexOf(b);
          if (i >= 0) this.idle.splice(i, 1);
        }
        break;
      }
      case 'active':
        this.active.delete(b);
        break;
      case 'resetting':
        this.resetting.delete(b);
        break;
      case 'closed':
        throw new Error(`backend ${b.id} is closed`);
      default: {
        const never: never = b.state;
        throw new Error(`unhandled backend state ${String(never)}`);
      }
    }
    b.state = state;
    switch (state) {
      case 'idle':
        // Never twice: leaving any state above took it out of the idle list if it was there.
        this.idle.push(b);
        break;
      case 'active':
        this.active.add(b);
        break;
      case 'resetting':
        this.resetting.add(b);
        break;
      case 'closed':
        this.closedTotal++;
        break;
      default: {
        const never: never = state;
        throw new Error(`unhandled backend state ${String(never)}`);
      }
    }
  }

  /** A free backend goes to the longest waiter (unless PAUSEd), else to the idle list. */
  private handOver(b: Backend, fromIdle = false): void {
    if (this.closed) return this.destroy(b);
    // Another worker waits for this pool's budget: this one goes back to it (see workers/budgets.ts).
    if (this.budget?.shouldGive() === true) return this.giveAway(b);
    if (this.waiters.size > 0 && !this.paused) {
      const [w, since] = this.waiters.entries().next().value!;
      this.waiters.delete(w); // the shared timer re-aims itself when it fires
      if (this.waiters.size === 0) this.budget?.satisfied();
      this.setState(b, 'active');
      // Inside a read cycle this is the release's own reading (the pooler's clock is a CycleClock).
      const now = this.deps.clock.now();
      return this.deliver(w, b, now, now - since);
    }
    // A new backend is born 'idle' in no list; setState puts it in (and never twice).
    if (!fromIdle) this.setState(b, 'idle');
    // Another worker waits: once idle long enough, this one (or another idle one) goes to it.
    if (this.budget?.othersWant() === true) this.giveIdle();
  }

  private open(): Promise<Backend> {
    this.connecting++;
    this.connectsTotal++;
    const budget = this.budget;
    return this.deps.connect(this.login).then(
      (c) => {
        this.connecting--;
        this.loggedIn(c.server);
        if (this.parametersCache === undefined) {
          this.parametersCache = new Map(c.parameters);
          this.budget?.tellParameters(this.parametersCache);
        }
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
      (b) => {
        this.settleParameters();
        this.handOver(b);
      },
      (e: unknown) => {
        if (this.loginFailed(e)) return; // the clients wait; a retry is planned
        // Waiters that no backend in use will ever reach get the server's error now.
        if (this.active.size + this.resetting.size + this.connecting > 0) return;
        this.failWaiters(e);
      },
    );
    return true;
  }

  /** Every waiter (and login waiting for parameters) gets the server's error. */
  private failWaiters(e: unknown): void {
    const error = e instanceof BackendLoginError ? e.toEncodedError() : fatal(SQLSTATE.CONNECTION_FAILURE, String(e));
    this.settleParameters(e);
    for (const w of [...this.waiters.keys()]) {
      this.waiters.delete(w);
      w.onError(error);
    }
  }

  /**
   * A login failed. For a reason that passes (and outageWaitMs > 0), the outage goes on: clients
   * keep waiting, the next login is planned after a backoff, and true is returned.
   */
  private loginFailed(e: unknown): boolean {
    const server = describeServer(this.deps.hosts?.host ?? { host: '', port: 0 });
    const reason = loginFailureReason(e);
    const message = e instanceof Error ? e.message : String(e);
    const passes = this.deps.hosts !== undefined && loginFailurePasses(e) && this.outageWaitMs() > 0 && !this.closed;
    this.deps.upstream?.(this, { type: 'loginFailed', server, reason, message, passes });
    if (!passes) return false;
    const now = this.deps.clock.now();
    if (this.outage.failed(e, now)) {
      this.deps.upstream?.(this, { type: 'serverDown', server, reason, message });
      // Idle connections from before may be dead too (a restart closes them, a network may not tell).
      this.suspectBefore = now;
      this.rearmWaitTimer();
    }
    // Logins waiting for the pool's first parameters have no timer of their own: they end here.
    if (now - this.outage.since! >= this.outageWaitMs()) this.settleParameters(e);
    if (this.retryTimer === null) {
      this.retryTimer = this.deps.clock.setTimer(() => {
        this.retryTimer = null;
        this.refill();
        // No client waits, but min_size wants connections: one login asks for them.
        if (this.outage.active && this.connecting === 0 && this.size < this.settings.minPoolSize) this.spawn(false);
      }, this.outage.nextDelayMs());
    }
    return true;
  }

  /** A login to `server` succeeded: an outage ends. */
  private loggedIn(server: ServerAddress): void {
    const outageMs = this.outage.succeeded(this.deps.clock.now());
    if (outageMs !== null) {
      this.deps.upstream?.(this, { type: 'serverUp', server: describeServer(server), outageMs });
      this.rearmWaitTimer();
    }
  }

  private outageWaitMs(): number {
    return this.deps.outageWaitMs?.() ?? 0;
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
    for (const x of [...this.active, ...this.resetting]) if (sameServer(x.server, b.server)) x.unsuitable = true;
  }

  /** `server` changed role: idle connections to it close (new logins there learn what it is now). */
  dropIdleOf(server: ServerAddress): void {
    for (const x of [...this.idle]) if (sameServer(x.server, server)) this.destroy(x);
  }

  private resetDone(b: Backend): void {
    if (b.state !== 'resetting') return;
    if (b.resetFailed || b.unsuitable) return this.destroy(b);
    b.lastUsedAt = this.deps.clock.now();
    this.handOver(b);
  }

  private onClosed(b: Backend, reason: string): void {
    if (b.state === 'closed') return;
    // The server closed it (a restart, a terminated backend): idle ones may be gone too.
    this.suspectBefore = this.deps.clock.now();
    const owner = b.state === 'active' ? b.owner : null;
    if (b.state === 'active') this.served(b, this.deps.clock.now());
    this.setState(b, 'closed');
    b.owner = null;
    b.destroy();
    owner?.onBackendLost(reason);
    this.refill();
  }

  /**
   * Closes `b`. `replace`: another is opened for whoever waits. Not when its budget goes to another
   * worker (`giveAway`): then it is closed once the server is done with it, and not replaced here.
   */
  private destroy(b: Backend, how: 'replace' | 'giveAway' = 'replace'): void {
    if (b.state === 'closed') return;
    if (b.state === 'active') this.served(b, this.deps.clock.now());
    this.setState(b, 'closed');
    b.owner = null;
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
    const forParameters = this.parameterWaiters.length > 0 && this.parametersCache === undefined ? 1 : 0;
    const demand = (this.paused ? 0 : this.waiters.size) + forParameters;
    let need = Math.min(demand - this.connecting, this.settings.poolSize - this.size);
    // During an outage one login at a time asks whether the server is back, after its backoff.
    if (this.outage.active) need = this.retryTimer === null ? Math.min(need, 1 - this.connecting) : 0;
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
    const b = this.idle[0]; // the least recently used
    if (b === undefined || this.closed || (this.waiters.size > 0 && !this.paused)) return false;
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
   * How long a client may wait (ms; 0 = forever): query_wait_timeout, and during an outage at most
   * outageWaitMs. Every waiter has the same limit, so arrival order stays deadline order.
   */
  private waitLimitMs(): number {
    const query = this.settings.queryWaitTimeoutMs;
    if (!this.outage.active) return query;
    const outage = this.outageWaitMs();
    return query <= 0 ? outage : Math.min(query, outage);
  }

  /** The wait limit changed (an outage began or ended): the timer aims again. */
  private rearmWaitTimer(): void {
    if (this.waitTimer !== null) this.deps.clock.clearTimer(this.waitTimer);
    this.waitTimer = null;
    this.armWaitTimer();
  }

  /** One timer for the oldest waiter, if there is none yet and waits have a limit. */
  private armWaitTimer(): void {
    const ms = this.waitLimitMs();
    if (this.waitTimer !== null || this.closed || ms <= 0) return;
    const first = this.waiters.values().next();
    if (first.done === true) return;
    this.waitTimer = this.deps.clock.setTimer(this.expireWaiters, Math.max(0, first.value + ms - this.deps.clock.now()));
  }

  /** Every waiter past its deadline gets query_wait_timeout; then the timer aims at the next one. */
  private readonly expireWaiters = (): void => {
    this.waitTimer = null;
    const ms = this.waitLimitMs();
    const now = this.deps.clock.now();
    const down = this.outage.active ? this.outage.lastError : undefined;
    // During an outage a client whose wait ends gets the server's own error (e.g. 57P03, 08001).
    const error =
      down === undefined
        ? fatal(SQLSTATE.QUERY_CANCELED, `query_wait_timeout: no server connection became free within ${ms} ms`)
        : down instanceof BackendLoginError
          ? down.toEncodedError()
          : fatal(SQLSTATE.CONNECTION_FAILURE, String(down));
    for (const [w, since] of this.waiters) {
      if (ms <= 0 || since + ms > now) break; // arrival order is deadline order
      this.waiters.delete(w);
      this.waitTimeoutsTotal++;
      w.onError(error);
    }
    this.armWaitTimer();
  };

  /**
   * Periodic (every second): close idle backends past their idle timeout or lifetime, keep
   * minPoolSize open (counted over the daemon's workers when there are several).
   */
  maintain(): void {
    if (this.closed) return;
    const now = this.deps.clock.now();
    const idleLimit = this.settings.serverIdleTimeoutMs;
    const min = this.settings.minPoolSize;
    for (const b of [...this.idle]) {
      if (this.expired(b, now)) this.destroy(b);
      else if (idleLimit > 0 && now - b.lastUsedAt >= idleLimit && this.mayCloseIdle(b, min)) this.destroy(b);
    }
    // During an outage the retry timer's one login asks whether the server is back (see refill).
    if (!this.outage.active) for (let n = min - (this.budget?.daemonServers() ?? this.size); n > 0; n--) if (!this.spawn(false)) break;
    // The budget's backstop: a pool still refused asks again, in case its last request found no one.
    this.budget?.remind();
    if (this.parameterWaiters.length > 0) this.budget?.askParameters();
    this.refill();
  }
}

const encodeQuery = (query: string): Buffer => encodeFrontend({ type: 'Query', query });

/** How long a connection must have been idle before it goes to another worker that wants one. */
export const IDLE_BEFORE_GIVING_MS = 50;
