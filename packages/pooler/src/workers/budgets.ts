// The daemon-wide server budget as one worker sees it. `pool.size` (per database and user) and
// `maxServerConnections` (all pools) hold for the whole daemon: a pool takes a unit of the
// shared count before it opens a server connection and gives it back once that connection is
// gone. A pool that is refused while its clients wait says so (`want`); the other workers then
// give back what they can spare: an idle connection at once, a busy one when its transaction
// ends, until the budget is spread evenly over the workers that need it (SharedCounts.shouldGive).
// The daemon-wide limit takes idle connections of any pool, as PgBouncer closes another pool's
// idle server connection when max_db_connections is reached.
import type { PeerMessage, Peers } from './peers.js';
import type { SharedCounts, Slot, TakeResult } from './shared-counts.js';

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
  /** A peer wants this pool's connections (set by `want` messages, cleared once nobody does). */
  readonly contended: boolean;
  /** Whether another worker waits for this pool's connections now. */
  othersWant(): boolean;
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
  contended = false;
  refusedGlobally = false;
  private wanting = false;
  /** A 'want' went out since the last 'freed': one message per round, not per refused attempt. */
  private announced = false;
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
    if (this.announced) return;
    this.announced = true;
    this.all.post(refused === 'pool' ? { type: 'want', from: this.all.worker, key: this.key } : { type: 'wantAny', from: this.all.worker });
  }

  satisfied(): void {
    if (!this.wanting) return;
    this.wanting = false;
    this.announced = false;
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
    this.announced = false;
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
    const { counts, worker } = this.all;
    this.contended = counts.othersWanting(this.slot, worker);
    return this.contended && counts.shouldGive(this.slot, worker);
  }

  peerWants(): void {
    this.contended = true;
    this.pool.giveIdle();
  }

  freed(): void {
    this.announced = false;
    if (this.wanting) this.pool.refill();
  }
}
