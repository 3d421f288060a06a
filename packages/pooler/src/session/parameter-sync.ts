// The client's values of the tracked parameters (application_name, TimeZone, search_path ...):
// set at startup, changed when the server reports a change (ParameterStatus) the client made, and
// re-applied with SET on every backend the client is given whose values differ. A backend
// remembers the signature of the last values it matched, so attaching it to a client with the
// same values costs one string comparison.
import { decodeBackendMessage, encodeBackend, encodeFrontend } from '@quicpool/wire';
import { canonicalTrackedName, setStatements } from './startup-parameters.js';
import type { AttachedBackend, CancelKey } from './types.js';

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

  /** The Query that SETs the client's values where `b` differs, or null when it matches already. */
  applyTo(b: AttachedBackend): Buffer | null {
    const sig = this.signature();
    const memo = b.trackedMatch;
    if (memo !== undefined && memo.signature === sig && memo.version === b.parametersVersion) return null;
    let changes: Map<string, string> | null = null;
    for (const [name, value] of this.tracked) {
      if (b.parameters.get(name) !== value) (changes ??= new Map()).set(name, value);
    }
    if (changes === null) {
      // The backend matches as it is: the next client with the same values skips the comparison.
      if (memo !== undefined) {
        memo.signature = sig;
        memo.version = b.parametersVersion ?? 0;
      }
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
