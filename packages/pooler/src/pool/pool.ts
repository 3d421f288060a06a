// The backends of one (database, user) pair. Every backend sits in exactly one of the lists
// below, matching its state, and moves only through setState. Clients that cannot get a backend
// wait in a FIFO queue with a deadline (queryWaitTimeoutMs).
import { encodeFrontend, errorResponse, SQLSTATE } from '@quicpool/wire';
import type { PoolSettings } from '../config/pool-settings.js';
import { Backend } from '../backend/backend.js';
import type { BackendState } from '../backend/backend.js';
import { BackendLoginError, connectBackend } from '../backend/connect.js';
import type { BackendConnection, BackendLogin } from '../backend/connect.js';
import type { ReleaseFacts } from '../session/types.js';

export interface Waiter {
  /** Called once with an 'active' backend, or onError once; never both. */
  onBackend(b: Backend): void;
  onError(errorResponse: Buffer): void;
}

export interface PoolStats {
  readonly idle: number;
  readonly active: number;
  readonly resetting: number;
  readonly connecting: number;
  readonly waiting: number;
  readonly connectsTotal: number;
  readonly closedTotal: number;
  readonly waitTimeoutsTotal: number;
  /** Requests (Query, Sync, FunctionCall) answered with ReadyForQuery, since the pool was made. */
  readonly queryCountTotal: number;
  /** Time those requests ran (from the first request of a batch out to the ReadyForQuery that ends it), µs. */
  readonly queryTimeUsTotal: number;
  /** Bytes received from and sent to this pool's clients. */
  readonly receivedBytesTotal: number;
  readonly sentBytesTotal: number;
}

export interface PoolDependencies {
  readonly now: () => number;
  readonly connect: (login: BackendLogin) => Promise<BackendConnection>;
}

const realDeps: PoolDependencies = { now: () => Date.now(), connect: connectBackend };

export class Pool {
  /** Idle backends, most recently used last (LIFO reuse keeps the working set warm). */
  private readonly idle: Backend[] = [];
  private readonly active = new Set<Backend>();
  private readonly resetting = new Set<Backend>();
  private connecting = 0;
  /**
   * Waiters in arrival order, each with its deadline (performance.now() ms; Infinity: no limit).
   * Every waiter of a pool has the same timeout, so arrival order is deadline order and one timer,
   * aimed at the oldest waiter, serves them all (no setTimeout/clearTimeout per wait).
   */
  private readonly waiters = new Map<Waiter, number>();
  private waitTimer: NodeJS.Timeout | null = null;
  private parametersCache: ReadonlyMap<string, string> | undefined;
  private parametersPromise: Promise<ReadonlyMap<string, string>> | undefined;
  private readonly maintenance: NodeJS.Timeout;
  private closed = false;
  private connectsTotal = 0;
  private closedTotal = 0;
  private waitTimeoutsTotal = 0;
  private queryCountTotal = 0;
  private queryTimeUsTotal = 0;
  private receivedBytesTotal = 0;
  private sentBytesTotal = 0;

  constructor(
    readonly database: string,
    readonly user: string,
    readonly settings: PoolSettings,
    private readonly login: BackendLogin,
    private readonly deps: PoolDependencies = realDeps,
  ) {
    this.maintenance = setInterval(() => this.maintain(), 1000);
    this.maintenance.unref();
    this.maintain();
  }

  /** True once a backend logged in (the pool's database and user are real). */
  get hasConnected(): boolean {
    return this.parametersCache !== undefined;
  }

  get size(): number {
    return this.idle.length + this.active.size + this.resetting.size + this.connecting;
  }

  stats(): PoolStats {
    return {
      idle: this.idle.length,
      active: this.active.size,
      resetting: this.resetting.size,
      connecting: this.connecting,
      waiting: this.waiters.size,
      connectsTotal: this.connectsTotal,
      closedTotal: this.closedTotal,
      waitTimeoutsTotal: this.waitTimeoutsTotal,
      queryCountTotal: this.queryCountTotal,
      queryTimeUsTotal: Math.round(this.queryTimeUsTotal),
      receivedBytesTotal: this.receivedBytesTotal,
      sentBytesTotal: this.sentBytesTotal,
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
    this.parametersPromise ??= this.open().then(
      (b) => {
        this.parametersPromise = undefined;
        this.handOver(b);
        return this.parametersCache ?? new Map(b.parameters);
      },
      (e: unknown) => {
        this.parametersPromise = undefined;
        throw e;
      },
    );
    return this.parametersPromise;
  }

  acquire(w: Waiter): void {
    if (this.closed) return w.onError(errorResponse('FATAL', SQLSTATE.ADMIN_SHUTDOWN, 'the pool is shutting down'));
    // The most recently used idle backend stays in the list until setState moves it (found at the end: O(1)).
    let b = this.lastIdle();
    const now = b === undefined ? 0 : this.deps.now(); // one clock read for both checks
    // Past its lifetime: closed now rather than reused until the next maintenance tick.
    for (; b !== undefined && this.expired(b, now); b = this.lastIdle()) this.destroy(b);
    if (b !== undefined && !this.needsCheck(b, now)) {
      this.setState(b, 'active');
      return this.deliver(w, b);
    }
    const ms = this.settings.queryWaitTimeoutMs;
    this.waiters.set(w, ms > 0 ? performance.now() + ms : Infinity);
    if (ms > 0) this.armWaitTimer();
    if (b !== undefined) this.check(b);
    else if (this.size < this.settings.poolSize) this.spawn();
  }

  /** Idle long enough that it may have died quietly (server restart, network): check before reuse. */
  private lastIdle(): Backend | undefined {
    const n = this.idle.length;
    return n === 0 ? undefined : this.idle[n - 1];
  }

  /** True while `w` is queued for a backend (not served, withdrawn or failed yet). */
  protected isWaiting(w: Waiter): boolean {
    return this.waiters.has(w);
  }

  /** Gives an 'active' backend to a waiter (served at once or after waiting); subclasses observe it. */
  protected deliver(w: Waiter, b: Backend): void {
    w.onBackend(b);
  }

  /** Fails a waiter that was queued (it is no longer in the queue); subclasses observe it. */
  protected reject(w: Waiter, error: Buffer): void {
    w.onError(error);
  }

  private needsCheck(b: Backend, now: number): boolean {
    return now - b.lastUsedAt >= this.settings.serverCheckDelayMs;
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
  }

  /** A client gives a backend back; what it needs before reuse follows from the facts. */
  release(b: Backend, facts: ReleaseFacts): void {
    if (b.state !== 'active') return;
    b.owner = null;
    const now = this.deps.now();
    b.lastUsedAt = now;
    if (facts.busy || this.closed || this.expired(b, now)) return this.destroy(b);
    const rollback = facts.status !== 'I';
    const reset = facts.dirty || this.settings.poolMode === 'session';
    if (!rollback && !reset) return this.handOver(b); // the common case: nothing to run, nothing allocated
    this.setState(b, 'resetting');
    b.resetPending = (rollback ? 1 : 0) + (reset ? 1 : 0);
    b.resetFailed = false;
    // Separate Query messages: DISCARD ALL cannot run inside the implicit transaction of a multi-statement query.
    if (rollback) b.writeNow(encodeQuery('ROLLBACK'));
    if (reset) b.writeNow(encodeQuery(this.settings.serverResetQuery));
  }

  /** Closes idle backends now; active ones are closed as they are released. */
  close(): void {
    this.closed = true;
    clearInterval(this.maintenance);
    if (this.waitTimer !== null) clearTimeout(this.waitTimer);
    this.waitTimer = null;
    const waiting = [...this.waiters.keys()];
    this.waiters.clear();
    for (const w of waiting) {
      this.reject(w, errorResponse('FATAL', SQLSTATE.ADMIN_SHUTDOWN, 'terminating connection due to administrator command'));
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

  /** A free backend goes to the longest waiter, else to the idle list. */
  private handOver(b: Backend): void {
    if (this.closed) return this.destroy(b);
    if (this.waiters.size > 0) {
      const w = this.waiters.keys().next().value!;
      this.waiters.delete(w); // the shared timer re-aims itself when it fires
      this.setState(b, 'active');
      return this.deliver(w, b);
    }
    // A new backend is born 'idle' in no list; setState puts it in (and never twice).
    this.setState(b, 'idle');
  }

  private open(): Promise<Backend> {
    this.connecting++;
    this.connectsTotal++;
    return this.deps.connect(this.login).then(
      (c) => {
        this.connecting--;
        this.parametersCache ??= new Map(c.parameters);
        const b = new Backend(c, this.deps.now(), { onResetDone: (x) => this.resetDone(x), onClosed: (x, r) => this.onClosed(x, r) });
        // Born 'idle' but in no list yet: handOver places it.
        return b;
      },
      (e: unknown) => {
        this.connecting--;
        throw e;
      },
    );
  }

  private spawn(): void {
    this.open().then(
      (b) => this.handOver(b),
      (e: unknown) => {
        // Waiters that no backend in use will ever reach get the server's error now.
        if (this.active.size + this.resetting.size + this.connecting > 0) return;
        const error = e instanceof BackendLoginError ? e.toErrorResponse() : errorResponse('FATAL', SQLSTATE.CONNECTION_FAILURE, String(e));
        for (const w of [...this.waiters.keys()]) {
          this.waiters.delete(w);
          this.reject(w, error);
        }
      },
    );
  }

  private resetDone(b: Backend): void {
    if (b.state !== 'resetting') return;
    if (b.resetFailed) return this.destroy(b);
    b.lastUsedAt = this.deps.now();
    this.handOver(b);
  }

  private onClosed(b: Backend, reason: string): void {
    if (b.state === 'closed') return;
    const owner = b.state === 'active' ? b.owner : null;
    this.setState(b, 'closed');
    b.owner = null;
    b.socket.destroy();
    owner?.onBackendLost(reason);
    this.refill();
  }

  private destroy(b: Backend): void {
    if (b.state === 'closed') return;
    this.setState(b, 'closed');
    b.owner = null;
    b.close();
    this.refill();
  }

  /** Replace closed backends for those still waiting. */
  private refill(): void {
    if (this.closed) return;
    let need = Math.min(this.waiters.size - this.connecting, this.settings.poolSize - this.size);
    for (; need > 0; need--) this.spawn();
  }

  private expired(b: Backend, now: number): boolean {
    return this.settings.serverLifetimeMs > 0 && now - b.createdAt >= this.settings.serverLifetimeMs;
  }

  /** One timer for the oldest waiter with a deadline, if there is none yet. */
  private armWaitTimer(): void {
    if (this.waitTimer !== null || this.closed) return;
    const first = this.waiters.values().next();
    if (first.done === true || first.value === Infinity) return;
    this.waitTimer = setTimeout(this.expireWaiters, Math.max(0, first.value - performance.now()) + 1);
  }

  /** Every waiter past its deadline gets query_wait_timeout; then the timer aims at the next one. */
  private readonly expireWaiters = (): void => {
    this.waitTimer = null;
    const now = performance.now();
    for (const [w, deadline] of this.waiters) {
      if (deadline > now) break; // arrival order is deadline order
      this.waiters.delete(w);
      this.waitTimeoutsTotal++;
      this.reject(w, 
        errorResponse('FATAL', SQLSTATE.QUERY_CANCELED, `query_wait_timeout: no server connection became free within ${this.settings.queryWaitTimeoutMs} ms`),
      );
    }
    this.armWaitTimer();
  };

  /** Periodic (every second): close idle backends past their idle timeout or lifetime, keep minPoolSize open. */
  maintain(): void {
    if (this.closed) return;
    const now = this.deps.now();
    const idleLimit = this.settings.serverIdleTimeoutMs;
    for (const b of [...this.idle]) {
      const tooIdle = idleLimit > 0 && now - b.lastUsedAt >= idleLimit && this.size > this.settings.minPoolSize;
      if (tooIdle || this.expired(b, now)) this.destroy(b);
    }
    for (let n = this.settings.minPoolSize - this.size; n > 0; n--) this.spawn();
  }
}

const encodeQuery = (query: string): Buffer => encodeFrontend({ type: 'Query', query });
