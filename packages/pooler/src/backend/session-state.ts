// What the client sessions leave on a server connection and find there again: it belongs to the
// server's session, so it outlives each client's link to it (a statement prepared there stays).
// The sessions keep it up to date; the pool and a client's RESET mark it unknown, through
// settingsReset.
import { BackendStatements } from '../prepared/statement-cache.js';

export class ServerSessionState {
  /**
   * The tracked-parameter signature of the last client whose values the server was found to
   * have, at which `parametersVersion` of the backend: a client with the same signature then
   * needs no comparison.
   */
  readonly trackedMatch = { signature: '', version: -1 };
  /**
   * The values the pooler SET there of tracked parameters the server does not report
   * (statement_timeout ..., search_path before PostgreSQL 18). `known` is false after a reset:
   * each of them is then SET or RESET at the next attach.
   */
  readonly unreported = { values: new Map<string, string>(), known: true };
  /** The statements prepared there (made at a routing session's first attach). */
  statements: BackendStatements | undefined = undefined;

  /** `statements`, made now if need be (an LRU of `limit` statements, default 1000). */
  statementsFor(limit: number | undefined): BackendStatements {
    return (this.statements ??= new BackendStatements(limit ?? 1000));
  }

  /** The server's settings were reset (the pool's reset query, a client's RESET ALL or DISCARD ALL). */
  settingsReset(): void {
    this.unreported.known = false;
    this.trackedMatch.version = -1;
  }
}
