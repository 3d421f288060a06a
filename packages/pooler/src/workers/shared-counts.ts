// What the workers of one daemon count together, in one SharedArrayBuffer: client sessions and
// server connections in all and per (database, user) pool, and per pool how many server
// connections each worker holds and whether it is waiting for one. Counts move with Atomics, so
// a worker takes or gives a server connection of the daemon-wide budget without asking anyone.
// Pools are found by a 64-bit hash of their key in an open-addressing table whose inserts and
// removals take a lock (they happen when a worker first sees a pool and after it forgot it);
// a worker holds one reference to a pool's slot while it has the pool or admitted clients of it.
// Every count is also kept per worker, so the counts of a worker that died can be taken back.
import { createHash } from 'node:crypto';

/** Most workers a daemon runs (the worker is one byte of a connection id and of a cancel key). */
export const MAX_WORKERS = 256;

/** Header words: the table lock, daemon-wide servers and clients. */
const LOCK = 0;
const TOTAL_SERVERS = 1;
const TOTAL_CLIENTS = 2;
const HEADER = 4;

/**
 * Per slot: hash (2 words), references (workers holding it), servers, clients, servers being
 * closed by maintenance, then per worker: servers held, wanting (0/1), clients, referenced (0/1).
 */
const HASH_HI = 0;
const HASH_LO = 1;
const REFS = 2;
const SERVERS = 3;
const CLIENTS = 4;
const CLOSING = 5;
const FIXED = 6;
/** Per-worker arrays, each `workers` long, after FIXED. */
const HELD = 0;
const WANTING = 1;
const CLIENTS_OF = 2;
const REFERENCED = 3;
const PER_WORKER = 4;
/** A removed slot (probing continues past it; an insert may reuse it). */
const TOMBSTONE = -1;

/** Bytes the table may take at most; the slot count follows from the worker count. */
const MAX_TABLE_BYTES = 4 * 1024 * 1024;
const MAX_SLOTS = 4096;

export type TakeResult = 'ok' | 'pool' | 'global';

/** A pool's place in the table (stable while someone holds a reference to it). */
export type Slot = number & { readonly __slot: unique symbol };

export class SharedCounts {
  readonly workers: number;
  readonly slots: number;
  private readonly a: Int32Array;
  private readonly stride: number;

  /** `buffer` from `SharedCounts.allocate(workers)` (shared by every worker), or a plain one for one worker. */
  constructor(buffer: SharedArrayBuffer | ArrayBuffer, workers: number) {
    if (!Number.isInteger(workers) || workers < 1 || workers > MAX_WORKERS) throw new RangeError(`workers must be 1-${MAX_WORKERS}, got ${workers}`);
    this.workers = workers;
    this.stride = FIXED + PER_WORKER * workers;
    this.a = new Int32Array(buffer);
    this.slots = Math.floor((this.a.length - HEADER) / this.stride);
    if (this.slots < 1) throw new RangeError('buffer too small for the table');
  }

  /** A zeroed buffer sized for `workers` (shared when `shared`, e.g. between worker threads). */
  static allocate(workers: number, shared = true): SharedArrayBuffer | ArrayBuffer {
    const stride = FIXED + PER_WORKER * workers;
    const slots = Math.max(64, Math.min(MAX_SLOTS, Math.floor(MAX_TABLE_BYTES / 4 / stride)));
    const bytes = (HEADER + slots * stride) * 4;
    return shared ? new SharedArrayBuffer(bytes) : new ArrayBuffer(bytes);
  }

  // --- the table ------------------------------------------------------------------------------

  /** Index of worker `w`'s entry in per-worker array `which` of the slot at `base`. */
  private at(base: number, which: number, w: number): number {
    return base + FIXED + which * this.workers + w;
  }

  /** Worker `w` takes a reference to `key`'s slot (made if new); null when the table is full. */
  attach(key: string, w: number): Slot | null {
    const [hi, lo] = hashOf(key);
    return this.locked(() => {
      let free = -1;
      for (let probe = 0; probe < this.slots; probe++) {
        const i = (((hi ^ lo) >>> 0) + probe) % this.slots;
        const base = HEADER + i * this.stride;
        const refs = this.a[base + REFS]!;
        const empty = refs === 0 && this.a[base + HASH_HI] === 0 && this.a[base + HASH_LO] === 0;
        if (refs === TOMBSTONE || empty) {
          if (free < 0) free = i;
          if (empty) break; // the key is not further along
          continue;
        }
        if (this.a[base + HASH_HI] === hi && this.a[base + HASH_LO] === lo) {
          this.reference(base, w);
          return i as Slot;
        }
      }
      if (free < 0) return null;
      const base = HEADER + free * this.stride;
      this.a.fill(0, base, base + this.stride);
      this.a[base + HASH_HI] = hi;
      this.a[base + HASH_LO] = lo;
      this.reference(base, w);
      return free as Slot;
    });
  }

  private reference(base: number, w: number): void {
    if (this.a[this.at(base, REFERENCED, w)] !== 0) return;
    this.a[this.at(base, REFERENCED, w)] = 1;
    Atomics.add(this.a, base + REFS, 1);
  }

  /** Worker `w` gives its reference back; the last one removes the slot (its counts are zero by then). */
  detach(slot: Slot, w: number): void {
    this.locked(() => this.unreference(this.base(slot), w));
  }

  private unreference(base: number, w: number): void {
    if (this.a[this.at(base, REFERENCED, w)] === 0) return;
    this.a[this.at(base, REFERENCED, w)] = 0;
    if (Atomics.sub(this.a, base + REFS, 1) !== 1) return;
    this.a.fill(0, base, base + this.stride);
    this.a[base + REFS] = TOMBSTONE;
  }

  /**
   * Worker `w` is gone (it died, or it is replaced): its servers, clients, wishes and references
   * are taken out of every count, as if it had given each back.
   */
  forgetWorker(w: number): void {
    this.locked(() => {
      for (let i = 0; i < this.slots; i++) {
        const base = HEADER + i * this.stride;
        if (this.a[base + REFS]! <= 0) continue;
        const held = Atomics.exchange(this.a, this.at(base, HELD, w), 0);
        Atomics.sub(this.a, base + SERVERS, held);
        Atomics.sub(this.a, TOTAL_SERVERS, held);
        const clients = Atomics.exchange(this.a, this.at(base, CLIENTS_OF, w), 0);
        Atomics.sub(this.a, base + CLIENTS, clients);
        Atomics.sub(this.a, TOTAL_CLIENTS, clients);
        Atomics.store(this.a, this.at(base, WANTING, w), 0);
        this.unreference(base, w);
      }
    });
  }

  private locked<T>(fn: () => T): T {
    // Held for a probe over the table: microseconds. Worker threads wait; one thread never contends.
    while (Atomics.compareExchange(this.a, LOCK, 0, 1) !== 0) Atomics.wait(this.a, LOCK, 1, 1);
    try {
      return fn();
    } finally {
      Atomics.store(this.a, LOCK, 0);
      Atomics.notify(this.a, LOCK, 1);
    }
  }

  private base(slot: Slot): number {
    return HEADER + slot * this.stride;
  }

  // --- server connections ---------------------------------------------------------------------

  /**
   * Worker `w` opens a server connection of the pool in `slot`: counted at once if the pool stays
   * within `poolCap` and the daemon within `globalCap` (0: no daemon-wide limit); else which
   * limit said no, and nothing is counted. A worker that holds more of the pool than another that
   * waits for it lets that one go first (also 'pool'), so a freed unit goes where it is short.
   */
  takeServer(slot: Slot, w: number, poolCap: number, globalCap: number): TakeResult {
    const base = this.base(slot);
    const mine = Atomics.load(this.a, this.at(base, HELD, w));
    for (let u = 0; u < this.workers; u++) {
      if (u !== w && Atomics.load(this.a, this.at(base, WANTING, u)) !== 0 && Atomics.load(this.a, this.at(base, HELD, u)) < mine) return 'pool';
    }
    for (;;) {
      const n = Atomics.load(this.a, base + SERVERS);
      if (n >= poolCap) return 'pool';
      if (Atomics.compareExchange(this.a, base + SERVERS, n, n + 1) === n) break;
    }
    if (Atomics.add(this.a, TOTAL_SERVERS, 1) >= globalCap && globalCap > 0) {
      Atomics.sub(this.a, TOTAL_SERVERS, 1);
      Atomics.sub(this.a, base + SERVERS, 1);
      return 'global';
    }
    Atomics.add(this.a, this.at(base, HELD, w), 1);
    return 'ok';
  }

  /** Worker `w`'s server connection of `slot` is gone (closed and confirmed closed). */
  giveServer(slot: Slot, w: number): void {
    const base = this.base(slot);
    Atomics.sub(this.a, this.at(base, HELD, w), 1);
    Atomics.sub(this.a, base + SERVERS, 1);
    Atomics.sub(this.a, TOTAL_SERVERS, 1);
  }

  /** Server connections of `slot` that worker `w` holds (opening ones included). */
  held(slot: Slot, w: number): number {
    return Atomics.load(this.a, this.at(this.base(slot), HELD, w));
  }

  /** Marks whether worker `w` has clients of `slot` waiting for a server connection it cannot open. */
  setWanting(slot: Slot, w: number, on: boolean): void {
    Atomics.store(this.a, this.at(this.base(slot), WANTING, w), on ? 1 : 0);
  }

  /**
   * Whether worker `w` should give one of its server connections of `slot` to a wanting worker:
   * one that has none, or that has two fewer (the budget moves towards an even share, and
   * never back and forth between two workers that differ by one).
   */
  shouldGive(slot: Slot, w: number): boolean {
    const base = this.base(slot);
    const mine = Atomics.load(this.a, this.at(base, HELD, w));
    if (mine === 0) return false;
    for (let u = 0; u < this.workers; u++) {
      if (u === w || Atomics.load(this.a, this.at(base, WANTING, u)) === 0) continue;
      const theirs = Atomics.load(this.a, this.at(base, HELD, u));
      if (theirs === 0 || mine >= theirs + 2) return true;
    }
    return false;
  }

  /** Whether a worker other than `w` waits for a server connection of `slot`. */
  othersWanting(slot: Slot, w: number): boolean {
    const base = this.base(slot);
    for (let u = 0; u < this.workers; u++) if (u !== w && Atomics.load(this.a, this.at(base, WANTING, u)) !== 0) return true;
    return false;
  }

  /** Server connections of `slot` in the whole daemon, not counting those maintenance is closing. */
  servers(slot: Slot): number {
    const base = this.base(slot);
    return Atomics.load(this.a, base + SERVERS) - Atomics.load(this.a, base + CLOSING);
  }

  /**
   * Maintenance may close an idle server connection of `slot` if the daemon keeps at least `min`
   * (pool.min_size) without it: counted as closing until `closeDone`. Two workers never both
   * close the last ones above `min`.
   */
  reserveClose(slot: Slot, min: number): boolean {
    const base = this.base(slot);
    for (;;) {
      const closing = Atomics.load(this.a, base + CLOSING);
      if (Atomics.load(this.a, base + SERVERS) - closing - 1 < min) return false;
      if (Atomics.compareExchange(this.a, base + CLOSING, closing, closing + 1) === closing) return true;
    }
  }

  /** A connection `reserveClose` allowed is gone (after `giveServer`). */
  closeDone(slot: Slot): void {
    Atomics.sub(this.a, this.base(slot) + CLOSING, 1);
  }

  get totalServers(): number {
    return Atomics.load(this.a, TOTAL_SERVERS);
  }

  // --- client sessions ------------------------------------------------------------------------

  /**
   * A client session of worker `w` for `slot` is admitted if the daemon stays within `globalCap`
   * and the pool within `poolCap` (0: no limit); else which limit refused it (nothing counted).
   */
  admitClient(slot: Slot, w: number, poolCap: number, globalCap: number): TakeResult {
    if (Atomics.add(this.a, TOTAL_CLIENTS, 1) >= globalCap) {
      Atomics.sub(this.a, TOTAL_CLIENTS, 1);
      return 'global';
    }
    const base = this.base(slot);
    if (Atomics.add(this.a, base + CLIENTS, 1) >= poolCap && poolCap > 0) {
      Atomics.sub(this.a, base + CLIENTS, 1);
      Atomics.sub(this.a, TOTAL_CLIENTS, 1);
      return 'pool';
    }
    Atomics.add(this.a, this.at(base, CLIENTS_OF, w), 1);
    return 'ok';
  }

  leaveClient(slot: Slot, w: number): void {
    const base = this.base(slot);
    Atomics.sub(this.a, this.at(base, CLIENTS_OF, w), 1);
    Atomics.sub(this.a, base + CLIENTS, 1);
    Atomics.sub(this.a, TOTAL_CLIENTS, 1);
  }

  get totalClients(): number {
    return Atomics.load(this.a, TOTAL_CLIENTS);
  }
}

/** Two words of a SHA-256 of the key, never both zero (zero marks an empty slot). */
function hashOf(key: string): [number, number] {
  const d = createHash('sha256').update(key).digest();
  const hi = d.readInt32BE(0);
  const lo = d.readInt32BE(4);
  return hi === 0 && lo === 0 ? [0, 1] : [hi, lo];
}
