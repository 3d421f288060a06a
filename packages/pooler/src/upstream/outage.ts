// One pool's view of a server it cannot log in to for a reason that passes (see login-failure.ts):
// when the outage began, the last error (what clients get when their wait ends), and when to try
// the next login. Retries back off exponentially from RETRY_FIRST_MS to RETRY_MAX_MS with jitter
// (each delay drawn from its upper half), so a restart that takes a second costs its clients at
// most about RETRY_MAX_MS more, and a fleet of poolers does not log in in lockstep. No I/O: the
// pool owns the timer and reads the clock.

/** The first retry's delay (ms), doubled after each failure up to RETRY_MAX_MS. */
export const RETRY_FIRST_MS = 10;
export const RETRY_MAX_MS = 250;

export class Outage {
  /** Clock ms of the first failed login of this outage; null while logins succeed. */
  private sinceMs: number | null = null;
  private failures = 0;
  private last: unknown = undefined;

  constructor(private readonly random: () => number = Math.random) {}

  get active(): boolean {
    return this.sinceMs !== null;
  }

  get since(): number | null {
    return this.sinceMs;
  }

  /** The error of the last failed login (what a client whose wait ends gets). */
  get lastError(): unknown {
    return this.last;
  }

  /** A login failed for a passing reason at `now`: true when this begins the outage. */
  failed(error: unknown, now: number): boolean {
    this.last = error;
    this.failures++;
    if (this.sinceMs !== null) return false;
    this.sinceMs = now;
    return true;
  }

  /** How long to wait before the next login (ms). */
  nextDelayMs(): number {
    const ceiling = Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** Math.min(this.failures - 1, 16));
    return Math.round(ceiling * (0.5 + this.random() / 2));
  }

  /** A login succeeded at `now`: the outage's length (ms) when one ends, else null. */
  succeeded(now: number): number | null {
    const since = this.sinceMs;
    this.sinceMs = null;
    this.failures = 0;
    this.last = undefined;
    return since === null ? null : now - since;
  }
}
