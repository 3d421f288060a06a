// A Pool the operator can PAUSE (new transactions wait, nothing is refused) and that reports when
// a client gets and gives back a backend, so wait and transaction times can be measured. It only
// wraps the Pool's public surface: the pool's own bookkeeping stays in pool.ts.
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
  private readonly wrappers = new Map<Waiter, Waiter>();

  constructor(database: string, user: string, settings: PoolSettings, login: BackendLogin, deps: PoolDependencies, private readonly hooks: GateHooks) {
    super(database, user, settings, login, deps);
  }

  override acquire(w: Waiter): void {
    if (this.hooks.isPaused(this.database)) {
      this.held.add(w);
      return;
    }
    const since = performance.now();
    const wrapped: Waiter = {
      onBackend: (b) => {
        this.wrappers.delete(w);
        this.hooks.assigned(this, w, b, performance.now() - since);
        w.onBackend(b);
      },
      onError: (e) => {
        this.wrappers.delete(w);
        w.onError(e);
      },
    };
    this.wrappers.set(w, wrapped);
    super.acquire(wrapped);
  }

  override withdraw(w: Waiter): void {
    if (this.held.delete(w)) return;
    const wrapped = this.wrappers.get(w);
    this.wrappers.delete(w);
    // The base class withdraws its own entries (our wrappers) too, e.g. when handing over.
    super.withdraw(wrapped ?? w);
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
