// A session's timers (authentication, the failure delay, client idle, idle in transaction, query):
// armed and disarmed as the session machine asks, each with its limit from the live config (0:
// off), firing back into the session as a 'timeout' event. Most are off and never armed.
import type { ResolvedPoolerConfig } from '../config/pooler-config.js';
import type { Clock, Timer } from '../runtime/clock.js';
import type { SessionTimer } from '../session/types.js';

export class SessionTimers {
  private readonly timers = new Map<SessionTimer, Timer>();
  private stopped = false;

  constructor(
    private readonly clock: Clock,
    private readonly config: () => ResolvedPoolerConfig,
    private readonly fire: (timer: SessionTimer) => void,
  ) {}

  set(timer: SessionTimer, armed: boolean): void {
    const ms = armed && !this.stopped ? limitOf(this.config(), timer) : 0;
    // Most timers are off (0 ms) and were never armed: nothing to clear, nothing to arm.
    if (this.timers.size === 0 && ms <= 0) return;
    const old = this.timers.get(timer);
    if (old !== undefined) {
      this.clock.clearTimer(old);
      this.timers.delete(timer);
    }
    if (ms <= 0) return;
    this.timers.set(timer, this.clock.setTimer(() => {
      this.timers.delete(timer);
      this.fire(timer);
    }, ms));
  }

  /** The session ended: every timer off, none armed again. */
  stop(): void {
    this.stopped = true;
    for (const t of this.timers.values()) this.clock.clearTimer(t);
    this.timers.clear();
  }
}

function limitOf(config: ResolvedPoolerConfig, timer: SessionTimer): number {
  switch (timer) {
    case 'authentication':
      return config.authTimeoutMs;
    case 'authFailure':
      return config.authFailureDelayMs;
    case 'clientIdle':
      return config.pool.clientIdleTimeoutMs;
    case 'idleInTransaction':
      return config.pool.idleTransactionTimeoutMs;
    case 'query':
      return config.pool.queryTimeoutMs;
    default: {
      const never: never = timer;
      throw new Error(`unknown timer ${String(never)}`);
    }
  }
}
