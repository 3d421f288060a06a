// A pool's periodic upkeep (the pool runs it every second and once when it is made): idle
// connections past their idle timeout or lifetime close, min_size connections are kept open
// (counted over the daemon's workers when there are several), and the budget's backstop asks again
// for what the pool still lacks.
import type { Backend } from '../backend/backend.js';
import type { PoolSettings } from '../config/pool-settings.js';
import type { ServerBudget } from '../workers/budgets.js';

/** What maintenance reads of the pool and does to it. */
export interface MaintainedPool {
  readonly settings: PoolSettings;
  readonly budget: ServerBudget | undefined;
  /** The idle connections, least recently used first. */
  readonly idle: readonly Backend[];
  /** Connections open and opening. */
  size(): number;
  /** Logins under way. */
  connecting(): number;
  /** The server is down: only the outage's retry logs in, to ask whether it is back. */
  serverDown(): boolean;
  /** Logins wait for the server's parameters. */
  parametersWanted(): boolean;
  /** Past its lifetime (server_lifetime). */
  expired(b: Backend, now: number): boolean;
  close(b: Backend): void;
  /** Opens one more connection for min_size; false when the budget refused it (min_size alone asks no one). */
  openForMin(): boolean;
  /** Opens what waiters need. */
  refill(): void;
}

export class Maintenance {
  constructor(private readonly pool: MaintainedPool) {}

  run(now: number): void {
    const p = this.pool;
    const idleLimit = p.settings.serverIdleTimeoutMs;
    const min = p.settings.minPoolSize;
    for (const b of [...p.idle]) {
      if (p.expired(b, now)) p.close(b);
      else if (idleLimit > 0 && now - b.lastUsedAt >= idleLimit && this.mayCloseIdle(b, min)) p.close(b);
    }
    this.topUp();
    // The budget's backstop: a pool still refused asks again, in case its last request found no one.
    p.budget?.remind();
    if (p.parametersWanted()) p.budget?.askParameters();
    p.refill();
  }

  /**
   * Opens connections toward min_size (counted over the daemon's workers), as many at once as
   * max_logins_in_progress allows; the pool calls it again as each login ends. During an outage
   * the retry timer's one login asks whether the server is back (see Pool.refill).
   */
  topUp(): void {
    const p = this.pool;
    if (p.serverDown()) return;
    let n = Math.min(p.settings.minPoolSize - (p.budget?.daemonServers() ?? p.size()), p.settings.maxLoginsInProgress - p.connecting());
    for (; n > 0; n--) if (!p.openForMin()) break;
  }

  /** Closing idle `b` keeps min_size connections (in the daemon, with several workers). */
  private mayCloseIdle(b: Backend, min: number): boolean {
    const budget = this.pool.budget;
    if (budget === undefined) return this.pool.size() > min;
    b.closeReserved = budget.reserveClose(min);
    return b.closeReserved;
  }
}
