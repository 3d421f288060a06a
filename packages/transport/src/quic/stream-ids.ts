// Bookkeeping of stream ids that must not allocate on the hot path.
import type { Connection } from '@matrixai/quic/native/index.js';

/** Peer stream ids seen so far, allocation-free for in-order arrival; bounded by reordering. */
export class SeenIds {
  private next = 0; // lowest client-bidi id (0, 4, 8 ...) not yet seen
  private ahead = new Set<number>();
  /** The lowest client-bidi id not seen yet. */
  get lowestUnseen(): number {
    return this.next;
  }
  has(id: number): boolean {
    return id < this.next || this.ahead.has(id);
  }
  add(id: number): void {
    if (id !== this.next) {
      this.ahead.add(id);
      return;
    }
    this.next += 4;
    while (this.ahead.delete(this.next)) this.next += 4;
  }
}

/** quiche forgets a stream once both directions are complete and acknowledged. */
export function isCollected(q: Connection, id: number): boolean {
  try {
    q.streamCapacity(id);
    return false;
  } catch {
    return true;
  }
}

