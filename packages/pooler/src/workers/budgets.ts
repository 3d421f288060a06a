// The daemon-wide server budget as one worker sees it. `pool.size` (per database and user) and
// `maxServerConnections` (all pools) hold for the whole daemon: a pool takes a unit of the
// shared count before it opens a server connection and gives it back once that connection is
// gone. A pool that is refused while its clients wait says so (`want`); the other workers then
// give back what they can spare: an idle connection at once, a busy one when its transaction
// ends, until the budget is spread evenly over the workers that need it (SharedCounts.shouldGive).
// The daemon-wide limit takes idle connections of any pool, as PgBouncer closes another pool's
// idle server connection when max_db_connections is reached.
import type { Clock, Timer } from '../runtime/clock.js';
import type { PeerMessage, Peers } from './peers.js';
import type { SharedCounts, Slot, TakeResult } from './shared-counts.js';

/**
 * A pool that wants connections says so at most once per this many ms (a saturated pool's queue
 * empties and fills again between transactions; a message each time would cost a cross-thread
 * wake-up every few transactions). One refused within the window goes out when the window ends,
 * if the pool still waits then. Workers that hold connections also read the wish from the
 * shared table whenever a transaction releases one (PoolBudget.shouldGive): the message only
 * wakes a worker whose connections sit idle.
 */
export const WANT_REPEAT_MS = 50;

/** What a pool needs from the budget (absent: the pool counts only its own connections, as one worker). */
export interface ServerBudget {
  /** One more server connection may be opened now (it is counted), or which limit refused it. */
  take(): TakeResult;
  /** A server connection this pool opened is gone (after its server closed it); `reserved`: by `reserveClose`. */
  give(reserved: boolean): void;
  /** Maintenance may close an idle connection and still keep `min` in the daemon (see SharedCounts.reserveClose). */
  reserveClose(min: number): boolean;
  /** Clients wait and the budget refused: ask the others for connections back. */
  want(refused: 'pool' | 'global'): void;
  /** Nobody of this pool waits for a connection any more. */
  satisfied(): void;
  /** Once a second: a pool still refused asks again (a peer that had no such pool then may have one now). */
  remind(): void;
  /** Server connections of this pool in the whole daemon (opening ones included, closing ones not). */
  daemonServers(): number;
  /** Logins wait for the server's parameters and this worker has no connection: ask the others. */
  askParameters(): void;
  /** This worker learned the server's parameters from its first connection: tell the others. */
  tellParameters(values: ReadonlyMap<string, string>): void;
  /**
   * Should a connection of ours that a transaction just released go to another worker that waits?
   * Only to even out the share (SharedCounts.shouldGive): a worker whose clients are between two
   * queries keeps its connections; ones idle for a while are given when asked (BudgetedPool.giveIdle).
   */
  shouldGive(): boolean;
  /** Whether another worker waits for this pool's connections now. */
  othersWant(): boolean;
  /** The pool is closed: its wish is withdrawn and no timer of the budget stays armed. */
  close(): void;
}

/** What the budget needs from a pool. */
export interface BudgetedPool {
  readonly poolSize: number;
  /** Try again to open the connections its waiters need (the budget may allow them now). */
  refill(): void;
  /** Close one connection idle for a while if no client waits (or once it has been); true when it did now. */
  giveIdle(): boolean;
  /** The server's parameters, when this pool knows them (from a connection of its own or a peer). */
  readonly knownParameters: ReadonlyMap<string, string> | undefined;
  /** A peer told the server's parameters: logins waiting for them go on. */
  learnParameters(values: ReadonlyMap<string, string>): void;
}

/** One worker's side of the budget: a `ServerBudget` per pool, and the peers' messages. */
export class Budgets {
  private readonly pools = new Map<string, PoolBudget>();
  constructor(
    readonly counts: SharedCounts,
    readonly worker: number,
    private readonly peers: Peers,
    private readonly globalCap: () => number,
    readonly clock: Clock,
  ) {}

  /** The budget of pool `key` (`slot` is the pool's place in the shared table). */
  forPool(key: string, slot: Slot, pool: BudgetedPool): ServerBudget {
    const b = new PoolBudget(this, key, slot, pool);
    this.pools.set(key, b);
    return b;
  }

  /** The pool is gone (it never had a connection left). */
  drop(key: string): void {
    this.pools.delete(key);
  }

  get maxServerConnections(): number {
    return this.globalCap();
  }

  post(m: PeerMessage): void {
    this.peers.post(m);
    // The channel does not echo: this worker's own pools hear its news here.
    this.receive(m, true);
  }

  /** A message from another worker (or, `own`, from this one). */
  receive(m: PeerMessage, own = false): void {
    switch (m.type) {
      case 'want':
        if (!own) this.pools.get(m.key)?.peerWants();
        return;
      case 'wantAny':
        // The daemon is at its limit: an idle connection of any pool goes (one per message).
        for (const b of this.pools.values()) if (b.pool.giveIdle()) return;
        return;
      case 'freed':
        this.pools.get(m.key)?.freed();
        for (const b of this.pools.values()) if (b.refusedGlobally && b.key !== m.key) b.freed();
        return;
      case 'parametersWanted': {
        const known = own ? undefined : this.pools.get(m.key)?.pool.knownParameters;
        if (known !== undefined) this.post({ type: 'parameters', key: m.key, values: [...known] });
        return;
      }
      case 'parameters':
        if (!own) this.pools.get(m.key)?.pool.learnParameters(new Map(m.values));
        return;
      case 'cancel':
        return; // handled by the core
      default: {
        const never: never = m;
        throw new Error(`unknown peer message ${JSON.stringify(never)}`);
      }
    }
  }
}

class PoolBudget implements ServerBudget {
  refusedGlobally = false;
  private wanting = false;
  /** When the last 'want' went out (see WANT_REPEAT_MS). */
  private announcedAt = -Infinity;
  /** The 'want' refused within the window, sent when it ends if still wanted. */
  private announceTimer: Timer | null = null;
  /** A 'parametersWanted' went out (again at most once a second, see remind). */
  private asked = false;

  constructor(
    private readonly all: Budgets,
    readonly key: string,
    private readonly slot: Slot,
    readonly pool: BudgetedPool,
  ) {}

  take(): TakeResult {
    return this.all.counts.takeServer(this.slot, this.all.worker, this.pool.poolSize, this.all.maxServerConnections);
  }

  give(reserved: boolean): void {
    this.all.counts.giveServer(this.slot, this.all.worker);
    if (reserved) this.all.counts.closeDone(this.slot);
    if (this.all.counts.othersWanting(this.slot, this.all.worker) || this.all.maxServerConnections > 0) this.all.post({ type: 'freed', key: this.key });
  }

  want(refused: 'pool' | 'global'): void {
    this.refusedGlobally = refused === 'global';
    if (!this.wanting) {
      this.wanting = true;
      this.all.counts.setWanting(this.slot, this.all.worker, true);
    }
    this.announce();
  }

  /** Posts the wish now, or when the window since the last one ends (WANT_REPEAT_MS). */
  private announce(): void {
    if (this.announceTimer !== null) return;
    const { clock } = this.all;
    const wait = this.announcedAt + WANT_REPEAT_MS - clock.now();
    if (wait > 0) {
      this.announceTimer = clock.setTimer(() => {
        this.announceTimer = null;
        if (this.wanting) this.announce();
      }, wait);
      return;
    }
    this.announcedAt = clock.now();
    const { worker } = this.all;
    this.all.post(this.refusedGlobally ? { type: 'wantAny', from: worker } : { type: 'want', from: worker, key: this.key });
  }

  satisfied(): void {
    if (!this.wanting) return;
    this.wanting = false;
    this.refusedGlobally = false;
    this.all.counts.setWanting(this.slot, this.all.worker, false);
  }

  reserveClose(min: number): boolean {
    return this.all.counts.reserveClose(this.slot, min);
  }

  othersWant(): boolean {
    return this.all.counts.othersWanting(this.slot, this.all.worker);
  }

  remind(): void {
    if (this.wanting) this.announce();
    this.asked = false;
  }

  askParameters(): void {
    if (this.asked) return;
    this.asked = true;
    this.all.post({ type: 'parametersWanted', from: this.all.worker, key: this.key });
  }

  tellParameters(values: ReadonlyMap<string, string>): void {
    if (this.all.counts.workers > 1) this.all.post({ type: 'parameters', key: this.key, values: [...values] });
  }

  daemonServers(): number {
    return this.all.counts.servers(this.slot);
  }

  shouldGive(): boolean {
    return this.all.counts.shouldGive(this.slot, this.all.worker);
  }

  peerWants(): void {
    this.pool.giveIdle();
  }

  freed(): void {
    if (this.wanting) this.pool.refill();
  }

  /** The pool is closed: no wish goes out any more. */
  close(): void {
    if (this.announceTimer !== null) this.all.clock.clearTimer(this.announceTimer);
    this.announceTimer = null;
    this.satisfied();
  }
}
