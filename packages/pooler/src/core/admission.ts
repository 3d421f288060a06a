// Which client sessions are admitted to which pool, within the daemon-wide limits: every worker
// counts in the same shared table (workers/shared-counts.ts), where this worker holds a reference
// to each pool's place, one per admitted client and one for its pool.
import { SQLSTATE } from '@quicpool/wire';
import type { Refusal } from '../session/types.js';
import type { SharedCounts, Slot } from '../workers/shared-counts.js';

export class Admission {
  private readonly slots = new Map<string, { readonly slot: Slot; refs: number }>();
  /** Client sessions admitted per pool key. */
  private readonly admitted = new Map<string, number>();

  constructor(
    private readonly counts: SharedCounts,
    private readonly worker: number,
  ) {}

  /** Admits a client of pool `key` (`database`, `user`) within the limits, or says why not. */
  admit(key: string, database: string, user: string, limits: { readonly maxClientsPerPool: number; readonly maxClientConnections: number }): Refusal | undefined {
    const slot = this.hold(key);
    if (slot === null) {
      return { sqlstate: SQLSTATE.TOO_MANY_CONNECTIONS, message: `too many pools: the pooler serves at most ${this.counts.slots} (database, user) pairs at once` };
    }
    const admitted = this.counts.admitClient(slot, this.worker, limits.maxClientsPerPool, limits.maxClientConnections);
    if (admitted !== 'ok') {
      this.release(key);
      return admitted === 'global'
        ? { sqlstate: SQLSTATE.TOO_MANY_CONNECTIONS, message: 'sorry, too many clients already' }
        : { sqlstate: SQLSTATE.TOO_MANY_CONNECTIONS, message: `too many clients for database "${database}" and user "${user}" (maxClientsPerPool ${limits.maxClientsPerPool})` };
    }
    this.admitted.set(key, (this.admitted.get(key) ?? 0) + 1);
    return undefined;
  }

  /** An admitted client of `key` ended: true when it was the pool's last. */
  leave(key: string): boolean {
    const entry = this.slots.get(key);
    if (entry !== undefined) this.counts.leaveClient(entry.slot, this.worker);
    this.release(key);
    const n = (this.admitted.get(key) ?? 1) - 1;
    if (n > 0) {
      this.admitted.set(key, n);
      return false;
    }
    this.admitted.delete(key);
    return true;
  }

  /** Client sessions admitted to `key` now. */
  clientsOf(key: string): number {
    return this.admitted.get(key) ?? 0;
  }

  /** A reference to `key`'s place in the shared counts (one per admitted client, one for its pool). */
  hold(key: string): Slot | null {
    const held = this.slots.get(key);
    if (held !== undefined) {
      held.refs++;
      return held.slot;
    }
    const slot = this.counts.attach(key, this.worker);
    if (slot === null) return null;
    this.slots.set(key, { slot, refs: 1 });
    return slot;
  }

  release(key: string): void {
    const held = this.slots.get(key);
    if (held === undefined || --held.refs > 0) return;
    this.slots.delete(key);
    this.counts.detach(held.slot, this.worker);
  }
}
