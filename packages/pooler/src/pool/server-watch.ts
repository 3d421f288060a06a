// A pool's watch over its server: whether logins fail for a reason that passes (an outage, see
// upstream/outage.ts), the one retry planned at a time, which idle connections may have died with
// the server, how long clients may wait meanwhile and what they get when their wait ends, and the
// events that tell all of it (the core adds the pool's database and user, the daemon logs them).
import { describeServer } from '../backend/dial.js';
import type { ServerAddress } from '../backend/dial.js';
import { BackendLoginError, fatal } from '../backend/login.js';
import type { Clock, Timer } from '../runtime/clock.js';
import type { EncodedError } from '../runtime/encoded-error.js';
import { SQLSTATE } from '@quicpool/wire';
import { loginFailurePasses, loginFailureReason } from '../upstream/login-failure.js';
import { Outage } from '../upstream/outage.js';
import type { HostChoice } from '../upstream/host-choice.js';
import type { PoolUpstreamEvent } from './types.js';

export interface ServerWatchDependencies {
  readonly clock: Clock;
  /** Absent for a virtual database: then nothing passes, every login error reaches the clients. */
  readonly hosts: HostChoice | undefined;
  readonly outageWaitMs: () => number;
  readonly tell: (e: PoolUpstreamEvent) => void;
  readonly random?: () => number;
  /** The wait limit changed (an outage began or ended). */
  readonly limitChanged: () => void;
  /** Time for the next login of the outage. */
  readonly retry: () => void;
  /** The outage has lasted outageWaitMs: logins waiting for the pool's first parameters get `error`. */
  readonly giveUpParameters: (error: unknown) => void;
}

export class ServerWatch {
  private readonly outage: Outage;
  private retryTimer: Timer | null = null;
  /** Idle connections last used before this (clock ms) may have died with the server: checked before reuse. */
  private suspectBefore = -Infinity;

  constructor(private readonly deps: ServerWatchDependencies) {
    this.outage = new Outage(deps.random);
  }

  /** Logins fail for a reason that passes: clients wait. */
  get down(): boolean {
    return this.outage.active;
  }

  /** A retry is planned: no other login until it. */
  get retrying(): boolean {
    return this.retryTimer !== null;
  }

  /** Was a connection last used at `lastUsedAt` perhaps lost with the server? */
  suspect(lastUsedAt: number): boolean {
    return lastUsedAt < this.suspectBefore;
  }

  /** The server closed a connection on its own (a restart, a terminated backend): idle ones may be gone too. */
  connectionLost(): void {
    this.suspectBefore = this.deps.clock.now();
  }

  /**
   * A login failed. For a reason that passes (and outageWaitMs > 0, and the pool open), the outage
   * goes on: clients keep waiting, the next login is planned after a backoff, and true is returned.
   */
  loginFailed(e: unknown, poolClosed: boolean): boolean {
    const server = describeServer(this.deps.hosts?.host ?? { host: '', port: 0 });
    const reason = loginFailureReason(e);
    const message = e instanceof Error ? e.message : String(e);
    const passes = this.deps.hosts !== undefined && loginFailurePasses(e) && this.deps.outageWaitMs() > 0 && !poolClosed;
    this.deps.tell({ type: 'loginFailed', server, reason, message, passes });
    if (!passes) return false;
    const now = this.deps.clock.now();
    if (this.outage.failed(e, now)) {
      this.deps.tell({ type: 'serverDown', server, reason, message });
      this.suspectBefore = now;
      this.deps.limitChanged();
    }
    // Logins waiting for the pool's first parameters have no timer of their own: they end here.
    if (now - this.outage.since! >= this.deps.outageWaitMs()) this.deps.giveUpParameters(e);
    this.retryTimer ??= this.deps.clock.setTimer(() => {
      this.retryTimer = null;
      this.deps.retry();
    }, this.outage.nextDelayMs());
    return true;
  }

  /** A login to `server` succeeded: an outage ends. */
  loggedIn(server: ServerAddress): void {
    const outageMs = this.outage.succeeded(this.deps.clock.now());
    if (outageMs === null) return;
    this.deps.tell({ type: 'serverUp', server: describeServer(server), outageMs });
    this.deps.limitChanged();
  }

  /** How long a client may wait (ms; 0 = forever): query_wait_timeout, during an outage at most outageWaitMs. */
  waitLimitMs(queryWaitTimeoutMs: number): number {
    if (!this.outage.active) return queryWaitTimeoutMs;
    const outage = this.deps.outageWaitMs();
    return queryWaitTimeoutMs <= 0 ? outage : Math.min(queryWaitTimeoutMs, outage);
  }

  /** What a client whose wait ran out gets: during an outage the server's own error (e.g. 57P03, 08001). */
  waitEndedError(ms: number): EncodedError {
    if (!this.outage.active) return fatal(SQLSTATE.QUERY_CANCELED, `query_wait_timeout: no server connection became free within ${ms} ms`);
    return loginError(this.outage.lastError);
  }

  stop(): void {
    if (this.retryTimer !== null) this.deps.clock.clearTimer(this.retryTimer);
    this.retryTimer = null;
  }
}

/** The ErrorResponse a failed login means for a waiting client. */
export function loginError(e: unknown): EncodedError {
  return e instanceof BackendLoginError ? e.toEncodedError() : fatal(SQLSTATE.CONNECTION_FAILURE, String(e));
}
