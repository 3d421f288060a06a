// The client's values of the tracked parameters (application_name, TimeZone, search_path,
// statement_timeout ...): set at startup (also from `options`), changed when the server reports a
// change (ParameterStatus) the client made, and re-applied with SET on every backend the client is
// given whose values differ. For parameters the server does not report, the backend's value is
// what the pooler SET there (kept on the backend); one a client did not set is RESET, so it never
// inherits another client's value. A backend remembers the signature of the last values it
// matched (backend/session-state.ts), so attaching it to a client with the same values costs one
// string comparison.
import { decodeBackendMessage, encodeBackend, encodeFrontend, errorResponse, SQLSTATE } from '@quicpool/wire';
import { canonicalTrackedName, setStatements, TRACKED_PARAMETERS } from './startup-parameters.js';
import type { AttachedBackend, CancelKey, EncodedError } from './types.js';

export class ParameterSync {
  private readonly tracked = new Map<string, string>();
  /** `tracked` as one string (null: to be computed). */
  private trackedSignature: string | null = null;
  /** The client's search_path (the scope of its prepared statement names), cached from `tracked`. */
  searchPath = '';

  /** The values the client asked for in its StartupMessage. */
  fromStartup(tracked: ReadonlyMap<string, string>): void {
    for (const [k, v] of tracked) this.set(k, v);
  }

  /**
   * The end of startup: the client starts with the server's value of every tracked parameter it
   * did not set (so a backend another client changed gets them back when this client has it), and
   * sees every parameter the server reports (with its own values), then its BackendKeyData.
   */
  greeting(server: ReadonlyMap<string, string>, key: CancelKey): Buffer[] {
    for (const [name, value] of server) {
      const tracked = canonicalTrackedName(name);
      if (tracked !== undefined && !this.tracked.has(tracked)) this.set(tracked, value);
    }
    const out: Buffer[] = [];
    for (const [name, value] of server) out.push(encodeBackend({ type: 'ParameterStatus', name, value: this.tracked.get(name) ?? value }));
    out.push(encodeBackend({ type: 'BackendKeyData', processId: key.processId, secretKey: key.secretKey }));
    return out;
  }

  /** A ParameterStatus the backend sent while the client held it: the client changed a value. */
  observe(parameterStatus: Buffer): void {
    const p = decodeBackendMessage(parameterStatus);
    if (p.type !== 'ParameterStatus') return;
    const name = canonicalTrackedName(p.name);
    if (name !== undefined) this.set(name, p.value);
  }

  /** `b` is known to have the client's values already (applyTo would return null and change nothing). */
  matches(b: AttachedBackend): boolean {
    const memo = b.sessionState.trackedMatch;
    return memo.signature === this.signature() && memo.version === b.parametersVersion;
  }

  /** The Query that SETs the client's values where `b` differs, or null when it matches already. */
  applyTo(b: AttachedBackend): Buffer | null {
    const sig = this.signature();
    const { trackedMatch: memo, unreported: u } = b.sessionState;
    if (memo.signature === sig && memo.version === b.parametersVersion) return null;
    let changes: Map<string, string | null> | null = null;
    let unreportedChanged = false;
    for (const [name, value] of this.tracked) {
      const reported = b.parameters.get(name);
      if (reported !== undefined) {
        if (reported !== value) (changes ??= new Map()).set(name, value);
      } else if (!u.known || u.values.get(name) !== value) {
        (changes ??= new Map()).set(name, value);
        u.values.set(name, value);
        unreportedChanged = true;
      }
    }
    // Values other clients left (or, after a reset, any value): back to the server's default.
    for (const name of u.known ? u.values.keys() : TRACKED_PARAMETERS) {
      if (this.tracked.has(name) || b.parameters.has(name)) continue;
      (changes ??= new Map()).set(name, null);
      u.values.delete(name);
      unreportedChanged = true;
    }
    u.known = true;
    // The server reports nothing of these: a memo of an earlier match no longer holds.
    if (unreportedChanged) memo.version = -1;
    if (changes === null) {
      // The backend matches as it is: the next client with the same values skips the comparison.
      memo.signature = sig;
      memo.version = b.parametersVersion;
      return null;
    }
    return encodeFrontend({ type: 'Query', query: setStatements(changes) });
  }

  private set(name: string, value: string): void {
    if (this.tracked.get(name) === value) return;
    this.tracked.set(name, value);
    this.trackedSignature = null;
    if (name === 'search_path') this.searchPath = value;
  }

  private signature(): string {
    if (this.trackedSignature === null) {
      let sig = '';
      for (const [name, value] of this.tracked) sig += `${name}\0${value}\0`;
      this.trackedSignature = sig;
    }
    return this.trackedSignature;
  }
}

/** A CommandComplete of RESET (ALL or one parameter) or DISCARD ALL. */
export function resetsParameters(commandComplete: Buffer): boolean {
  const tag = commandComplete.toString('latin1', 5, commandComplete.length - 1);
  return tag === 'RESET' || tag === 'DISCARD ALL';
}

/**
 * The server refused the SET of one of the client's startup values: the FATAL the client gets,
 * with the server's SQLSTATE and message (Postgres refuses such a login with them).
 */
export function refusedParameter(errorResponseBytes: Buffer): EncodedError {
  const e = decodeBackendMessage(errorResponseBytes);
  const fields = e.type === 'ErrorResponse' ? e.fields : {};
  const sqlstate = fields['C'] ?? SQLSTATE.INVALID_PARAMETER_VALUE;
  const message = fields['M'] ?? 'invalid startup parameter';
  return { bytes: errorResponse('FATAL', sqlstate, message), sqlstate, message };
}
