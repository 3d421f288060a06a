// What a session's timer running out means for the client: the FATAL error that ends the session,
// or nothing when what it timed is already over (a timer's disarming can cross its firing).
import { SQLSTATE } from '@quicpool/wire';
import type { SqlState } from '@quicpool/wire';
import type { SessionTimer } from './types.js';

/** Where the session stands when a timer fires. */
export interface TimedState {
  readonly loggingIn: boolean;
  /** No backend attached, no request waiting for one. */
  readonly idle: boolean;
  readonly idleInTransaction: boolean;
  /** A request is on the backend. */
  readonly busy: boolean;
}

/** The failure a timer's end gives, or null. ('authFailure' only ends the failed login's delay: see StartupAuth.) */
export function timeoutFailure(t: Exclude<SessionTimer, 'authFailure'>, s: TimedState): { readonly sqlstate: SqlState; readonly message: string } | null {
  switch (t) {
    case 'authentication':
      return s.loggingIn ? { sqlstate: SQLSTATE.QUERY_CANCELED, message: 'canceling authentication due to timeout' } : null;
    case 'clientIdle':
      return s.idle ? { sqlstate: SQLSTATE.IDLE_SESSION_TIMEOUT, message: 'terminating connection due to idle-session timeout' } : null;
    case 'idleInTransaction':
      return s.idleInTransaction ? { sqlstate: SQLSTATE.IDLE_IN_TRANSACTION_SESSION_TIMEOUT, message: 'terminating connection due to idle-in-transaction timeout' } : null;
    case 'query':
      return s.busy ? { sqlstate: SQLSTATE.QUERY_CANCELED, message: 'query_timeout: the server did not answer in time; the server connection is closed' } : null;
    default: {
      const never: never = t;
      throw new Error(`unknown timer ${String(never)}`);
    }
  }
}
