// Why a server login failed, and whether the reason passes. A server that is restarting, failing
// over or full says so in ways that pass within seconds: the connection is refused or reset, or
// it answers 57P03 (starting up, shutting down, in recovery), 57P01/57P02 (shut down or crashed
// while we logged in) or 53300 (too many connections). A pool waits through those instead of
// failing its clients (pool/opener.ts, pool/server-watch.ts). A wrong password, a missing
// database or role, a refused TLS handshake or a server that hangs do not pass: those reach the
// client at once, as before.
import { SQLSTATE } from '@quicpool/wire';
import { BackendLoginError } from '../backend/login.js';

/** BackendLoginError.code when hosts answered but none qualified for target_session_attrs (a failover under way). */
export const NO_TARGET = 'NO_TARGET';

/** Transport errors of a server that is not (yet, or any more) listening; ENOENT: its unix socket is gone. */
const PASSING_CODES: ReadonlySet<string> = new Set(['ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'EPIPE', 'ENOENT', NO_TARGET]);

const PASSING_SQLSTATES: ReadonlySet<string> = new Set([SQLSTATE.CANNOT_CONNECT_NOW, SQLSTATE.ADMIN_SHUTDOWN, SQLSTATE.CRASH_SHUTDOWN, SQLSTATE.TOO_MANY_CONNECTIONS]);

/** The failure's reason as a short label for counters and logs: a SQLSTATE, an errno, or 'other'. */
export function loginFailureReason(e: unknown): string {
  // Logins fail with a BackendLoginError (connect.ts wraps whatever the dial threw, code kept).
  return e instanceof BackendLoginError ? (e.fields?.['C'] ?? e.code ?? 'other') : 'other';
}

/** Does the reason pass (restart, failover, a full server), so that clients should wait? */
export function loginFailurePasses(e: unknown): boolean {
  if (!(e instanceof BackendLoginError)) return false;
  const sqlstate = e.fields?.['C'];
  if (sqlstate !== undefined) return PASSING_SQLSTATES.has(sqlstate);
  return e.code !== undefined && PASSING_CODES.has(e.code);
}
