// A pool's idle server connections going to other workers that wait for the daemon-wide budget
// (see workers/budgets.ts): the least recently used one goes once it has been idle for
// IDLE_BEFORE_GIVING_MS, if no client of the pool waits. One idle for less is likely between two of
// its clients' transactions (given away, it would come straight back as a new server login): one
// timer looks again once it has been idle that long (on the pooler's clock).
import type { Backend } from '../backend/backend.js';
import type { Clock, Timer } from '../runtime/clock.js';

/** How long a connection must have been idle before it goes to another worker that wants one. */
export const IDLE_BEFORE_GIVING_MS = 50;

export interface IdleGivingDependencies {
  readonly clock: Clock;
  /** The connection that would go: the least recently used idle one; none while the pool's clients wait or it is closed. */
  readonly candidate: () => Backend | undefined;
  /** Another worker still waits for this pool's connections. */
  readonly othersWant: () => boolean;
  /** `b` goes to the other worker (closed once its server is done with it, not replaced here). */
  readonly giveAway: (b: Backend) => void;
}

export class IdleGiving {
  /** The least recently used connection is not idle long enough yet: looked at again when it is. */
  private timer: Timer | null = null;

  constructor(private readonly deps: IdleGivingDependencies) {}

  /** Gives the least recently used idle connection away if it has been idle long enough (true); else looks again then. */
  offer(): boolean {
    const b = this.deps.candidate();
    if (b === undefined) return false;
    const young = b.lastUsedAt + IDLE_BEFORE_GIVING_MS - this.deps.clock.now();
    if (young > 0) {
      this.timer ??= this.deps.clock.setTimer(() => {
        this.timer = null;
        if (this.deps.othersWant()) this.offer();
      }, young);
      return false;
    }
    this.deps.giveAway(b);
    return true;
  }

  /** No timer any more (the pool closed). */
  stop(): void {
    if (this.timer !== null) this.deps.clock.clearTimer(this.timer);
    this.timer = null;
  }
}
