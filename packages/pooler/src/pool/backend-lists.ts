// The server connections of one pool, each in exactly one list matching its state ('closed' ones
// in none), moved only by move(): the pool's one place for where a backend is.
import type { Backend, BackendState } from '../backend/backend.js';

export class BackendLists {
  /** Idle backends, most recently used last (LIFO reuse keeps the working set warm). */
  readonly idle: Backend[] = [];
  readonly active = new Set<Backend>();
  readonly resetting = new Set<Backend>();
  /** Backends that reached 'closed'. */
  closedTotal = 0;

  /** Backends open (in a list). */
  get count(): number {
    return this.idle.length + this.active.size + this.resetting.size;
  }

  /** The most recently used idle backend (the end of the list: O(1)). */
  lastIdle(): Backend | undefined {
    const n = this.idle.length;
    return n === 0 ? undefined : this.idle[n - 1];
  }

  /** The one place a backend changes state: it leaves its old list and joins the new one. */
  move(b: Backend, state: BackendState): void {
    // Handed straight from one client to the next: it stays where it is (idle ones go to the end: LIFO).
    if (state === b.state && (state === 'active' || state === 'resetting')) return;
    switch (b.state) {
      case 'idle': {
        // LIFO: the backend taken is nearly always the last one.
        const last = this.idle.length - 1;
        if (last >= 0 && this.idle[last] === b) this.idle.pop();
        else {
          const i = this.idle.lastIndexOf(b);
          if (i >= 0) this.idle.splice(i, 1);
        }
        break;
      }
      case 'active':
        this.active.delete(b);
        break;
      case 'resetting':
        this.resetting.delete(b);
        break;
      case 'closed':
        throw new Error(`backend ${b.processId} is closed`);
      default: {
        const never: never = b.state;
        throw new Error(`unhandled backend state ${String(never)}`);
      }
    }
    b.state = state;
    switch (state) {
      case 'idle':
        // Never twice: leaving any state above took it out of the idle list if it was there.
        this.idle.push(b);
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
}
