// A Pool the operator can PAUSE (new transactions wait, nothing is refused) and that reports when
// a client gets and gives back a backend, so wait and transaction times can be measured. It only
// hooks the Pool's public surface and its deliver/reject hooks: the pool's own bookkeeping stays in
// pool.ts. Per transaction it allocates nothing: a client served at once waited 0 ms and costs no
// entry anywhere; only a client that really queues gets its arrival time recorded.
import { errorResponse, SQLSTATE } from '@quicpool/wire';
import type { Backend } from '../backend/backend.js';
import type { BackendLogin } from '../backend/connect.js';
import type { PoolSettings } from '../config/pool-settings.js';
import { Pool } from '../pool/pool.js';
import type { PoolDependencies, PoolStats, Waiter } from '../pool/pool.js';
import type { ReleaseFacts } from '../session/types.js';

export interface GateHooks {
  /** True while new transactions of this pool must wait (PAUSE). */
  isPaused(database: string): boolean;
  /** A waiter got a backend after waiting `waitMs`. */
  assigned(pool: GatedPool, waiter: Waiter, backend: Backend, waitMs: number): void;
  /** A backend comes back from its client. */
  released(pool: GatedPool, backend: Backend): void;
}

export class GatedPool extends Pool {
  private readonly held = new Set<Waiter>();
  /** performance.now() at arrival, for waiters queued in the base pool only. */
  private readonly waitingSince = new Map<Waiter, number>();

  constructor(database: string, user: string, settings: PoolSettings, login: BackendLogin, deps: PoolDependencies, private readonly hooks: GateHooks) {
    super(database, user, settings, login, deps);
  }

  override acquire(w: Waiter): void {
    if (this.hooks.isPaused(this.database)) {
      this.held.add(w);
      return;
    }
    const since = performance.now();
    super.acquire(w); // served synchronously (deliver) when a backend is idle
    if (this.isWaiting(w)) this.waitingSince.set(w, since);
  }

  protected override deliver(w: Waiter, b: Backend): void {
    let waitMs = 0;
    if (this.waitingSince.size > 0) {
      const since = this.waitingSince.get(w);
      if (since !== undefined) {
        this.waitingSince.delete(w);
        waitMs = performance.now() - since;
      }
    }
    this.hooks.assigned(this, w, b, waitMs);
    w.onBackend(b);
  }

  protected override reject(w: Waiter, error: Buffer): void {
    this.waitingSince.delete(w);
    w.onError(error);
  }

  override withdraw(w: Waiter): void {
    if (this.held.delete(w)) return;
    this.waitingSince.delete(w);
    super.withdraw(w);
  }

  override release(b: Backend, facts: ReleaseFacts): void {
    if (b.state === 'active') this.hooks.released(this, b);
    super.release(b, facts);
  }

  /** RESUME: the held waiters ask again, in arrival order. */
  releaseHeld(): void {
    for (const w of [...this.held]) {
      this.held.delete(w);
      this.acquire(w);
    }
  }

  override close(): void {
    const error = errorResponse('FATAL', SQLSTATE.ADMIN_SHUTDOWN, 'terminating connection due to administrator command');
    for (const w of [...this.held]) {
      this.held.delete(w);
      w.onError(error);
    }
    super.close();
  }

  override stats(): PoolStats {
    const s = super.stats();
    return { ...s, waiting: s.waiting + this.held.size };
  }
}
