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
  private readonly waiters = new Map<Waiter, NodeJS.Timeout | null>();
  private parametersCache: ReadonlyMap<string, string> | undefined;
  private parametersPromise: Promise<ReadonlyMap<string, string>> | undefined;
  private readonly maintenance: NodeJS.Timeout;
  private closed = false;
  private connectsTotal = 0;
  private closedTotal = 0;
  private waitTimeoutsTotal = 0;

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
    };
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
    const b = this.idle.pop();
    if (b !== undefined && !this.needsCheck(b)) {
      this.setState(b, 'active');
      return w.onBackend(b);
    }
    const ms = this.settings.queryWaitTimeoutMs;
    const timer = ms > 0 ? setTimeout(() => this.waitTimedOut(w), ms) : null;
    this.waiters.set(w, timer);
    if (b !== undefined) this.check(b);
    else if (this.size < this.settings.poolSize) this.spawn();
  }

  /** Idle long enough that it may have died quietly (server restart, network): check before reuse. */
  private needsCheck(b: Backend): boolean {
    return this.deps.now() - b.lastUsedAt >= this.settings.serverCheckDelayMs;
  }

  /** Runs the health check; when it answers the backend goes to the longest waiter (or back to idle). */
  private check(b: Backend): void {
    this.setState(b, 'resetting');
    b.resetPending = 1;
    b.resetFailed = false;
    b.write(encodeQuery(this.settings.serverCheckQuery));
  }

  /** The waiter no longer wants a backend (its client left). */
  withdraw(w: Waiter): void {
    const timer = this.waiters.get(w);
    if (timer !== undefined && timer !== null) clearTimeout(timer);
    this.waiters.delete(w);
  }

  /** A client gives a backend back; what it needs before reuse follows from the facts. */
  release(b: Backend, facts: ReleaseFacts): void {
    if (b.state !== 'active') return;
    b.owner = null;
    b.lastUsedAt = this.deps.now();
    if (facts.busy || this.closed || this.expired(b)) return this.destroy(b);
    const queries: string[] = [];
    if (facts.status !== 'I') queries.push('ROLLBACK');
    if (facts.dirty || this.settings.poolMode === 'session') queries.push(this.settings.serverResetQuery);
    if (queries.length === 0) return this.handOver(b);
    this.setState(b, 'resetting');
    b.resetPending = queries.length;
    b.resetFailed = false;
    // Separate Query messages: DISCARD ALL cannot run inside the implicit transaction of a multi-statement query.
    for (const q of queries) b.write(encodeQuery(q));
  }

  /** Closes idle backends now; active ones are closed as they are released. */
  close(): void {
    this.closed = true;
    clearInterval(this.maintenance);
    for (const [w, timer] of this.waiters) {
      if (timer !== null) clearTimeout(timer);
      w.onError(errorResponse('FATAL', SQLSTATE.ADMIN_SHUTDOWN, 'terminating connection due to administrator command'));
    }
    this.waiters.clear();
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
        const i = this.idle.indexOf(b);
        if (i >= 0) this.idle.splice(i, 1);
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
        if (!this.idle.includes(b)) this.idle.push(b);
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
    const next = this.waiters.keys().next();
    if (!next.done) {
      const w = next.value;
      this.withdraw(w);
      this.setState(b, 'active');
      return w.onBackend(b);
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
          this.withdraw(w);
          w.onError(error);
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

  private expired(b: Backend): boolean {
    return this.settings.serverLifetimeMs > 0 && this.deps.now() - b.createdAt >= this.settings.serverLifetimeMs;
  }

  private waitTimedOut(w: Waiter): void {
    if (!this.waiters.has(w)) return;
    this.waiters.delete(w);
    this.waitTimeoutsTotal++;
    w.onError(
      errorResponse('FATAL', SQLSTATE.QUERY_CANCELED, `query_wait_timeout: no server connection became free within ${this.settings.queryWaitTimeoutMs} ms`),
    );
  }

  /** Periodic (every second): close idle backends past their idle timeout or lifetime, keep minPoolSize open. */
  maintain(): void {
    if (this.closed) return;
    const now = this.deps.now();
    const idleLimit = this.settings.serverIdleTimeoutMs;
    for (const b of [...this.idle]) {
      const tooIdle = idleLimit > 0 && now - b.lastUsedAt >= idleLimit && this.size > this.settings.minPoolSize;
      if (tooIdle || this.expired(b)) this.destroy(b);
    }
    for (let n = this.settings.minPoolSize - this.size; n > 0; n--) this.spawn();
  }
}

const encodeQuery = (query: string): Buffer => encodeFrontend({ type: 'Query', query });
