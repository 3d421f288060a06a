// PAUSE as PgBouncer has it: transactions that have not started wait until RESUME, running ones
// finish, and PAUSE answers once no server connection is lent to a client (or gives up after its
// timeout, on the pooler's clock). The pools do the waiting; this keeps who waits for the quiet.
import type { Clock } from '../runtime/clock.js';

export class PauseState {
  private on = false;
  private waiters: Array<() => void> = [];

  constructor(private readonly clock: Clock) {}

  get paused(): boolean {
    return this.on;
  }

  /** Resolves true once `quiet()` is called (or at once when `lent` is 0), false after `timeoutMs`. */
  begin(lent: number, timeoutMs: number): Promise<boolean> {
    this.on = true;
    if (lent === 0) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const timer = this.clock.setTimer(() => {
        this.waiters = this.waiters.filter((w) => w !== done);
        resolve(false);
      }, timeoutMs);
      const done = (): void => {
        this.clock.clearTimer(timer);
        resolve(true);
      };
      this.waiters.push(done);
    });
  }

  /** Someone waits for the last lent server connection to come back. */
  get waiting(): boolean {
    return this.waiters.length > 0;
  }

  /** No server connection is lent any more. */
  quiet(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const done of w) done();
  }

  end(): void {
    this.on = false;
  }
}
