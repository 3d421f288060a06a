// Opening a pool's server connections: the logins under way, the unit of the server budget each
// takes first (a refused one, for waiting clients, asks the other workers; the unit comes back once
// the connection is gone), what a login tells (an outage ended, the server's parameters) and what
// a failed one means for the waiting clients. A new connection is born 'idle' in no list: the pool
// places it. How many the pool needs is the pool's to say (Pool.refill, maintenance.ts).
import { Backend } from '../backend/backend.js';
import type { BackendConnection } from '../backend/connect.js';
import type { Clock } from '../runtime/clock.js';
import type { WriteBatcher } from '../runtime/write-batcher.js';
import type { ServerBudget } from '../workers/budgets.js';
import type { BackendLists } from './backend-lists.js';
import type { ServerParameters } from './server-parameters.js';
import { loginError } from './server-watch.js';
import type { ServerWatch } from './server-watch.js';
import type { PoolTotals } from './totals.js';
import type { WaitQueue } from './wait-queue.js';

export interface OpenerDependencies {
  readonly clock: Clock;
  readonly batcher: WriteBatcher;
  /** Logs in as the pool's database and user. */
  readonly connect: () => Promise<BackendConnection>;
  readonly budget: ServerBudget | undefined;
  readonly watch: ServerWatch;
  readonly params: ServerParameters;
  readonly totals: PoolTotals;
  /** The pool's connections and waiting clients (a failed login may end their wait). */
  readonly lists: BackendLists;
  readonly waits: WaitQueue;
  readonly closed: () => boolean;
  /** What a connection tells the pool (see Backend). */
  readonly onResetDone: (b: Backend) => void;
  readonly onClosed: (b: Backend, reason: string) => void;
  readonly onRoleChanged: (b: Backend) => void;
  /** A new connection, for the pool to place (a waiter or the idle list). */
  readonly opened: (b: Backend) => void;
}

export class Opener {
  private count = 0;

  constructor(private readonly deps: OpenerDependencies) {}

  /** Logins under way. */
  get connecting(): number {
    return this.count;
  }

  /**
   * Opens one more server connection; false when the server budget refused it (then, for
   * `forWaiters`, the pool asks the other workers for one; min_size alone never does).
   */
  spawn(forWaiters = true): boolean {
    const budget = this.deps.budget;
    if (budget !== undefined) {
      const taken = budget.take();
      if (taken !== 'ok') {
        if (forWaiters) budget.want(taken);
        return false;
      }
    }
    this.open();
    return true;
  }

  /** A login failed: for a reason that passes the clients wait for the retry (see ServerWatch). */
  private failed(e: unknown): void {
    const d = this.deps;
    if (d.watch.loginFailed(e, d.closed())) return;
    // Waiters that no connection in use will ever reach (nor the parameters' logins) get the server's error now.
    if (d.lists.active.size + d.lists.resetting.size + this.count > 0) return;
    const error = loginError(e);
    d.params.settle(e);
    for (const w of d.waits.takeAll()) w.onError(error);
  }

  /**
   * One login. Its end and the new connection's placement are one step: the pool never counts a
   * connection that is neither under way nor in a list (it would open one too many).
   */
  private open(): void {
    const d = this.deps;
    this.count++;
    d.totals.connects++;
    const budget = d.budget;
    d.connect().then(
      (c) => {
        this.count--;
        d.watch.loggedIn(c.server);
        const parameters = new Map(c.parameters);
        if (d.params.learn(parameters)) budget?.tellParameters(parameters);
        d.opened(
          new Backend(c, d.clock, d.batcher, {
            onResetDone: d.onResetDone,
            onClosed: d.onClosed,
            onRoleChanged: d.onRoleChanged,
            // The budget comes back once the server has closed its end: never two at once for one unit.
            ...(budget !== undefined ? { onGone: (x: Backend) => budget.give(x.closeReserved) } : {}),
          }),
        );
      },
      (e: unknown) => {
        this.count--;
        budget?.give(false);
        this.failed(e);
      },
    );
  }
}
