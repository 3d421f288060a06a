// The client session the driver runs: the session machine (session-machine.ts) and the plain
// lane's shortcuts through it (driver/plain-lane.md). Each shortcut takes the machine from one
// state to the one its events would lead to, for a transaction of one plain Query, and changes
// nothing when they would lead anywhere else; the driver then does the I/O its actions would ask
// for. What the machine's parts decide (the statement router, the transaction tracker, the
// parameters, the session-state guard) stays theirs: each lends a check and a step here.
import { MessageType } from '@quicpool/wire';
import { startsWithD } from '../prepared/deallocate.js';
import { SessionMachine } from './session-machine.js';
import { sessionStateChange } from './session-state-change.js';
import type { AttachedBackend } from './types.js';

export class ClientSession extends SessionMachine {
  /**
   * A whole Query from the client while idle, no backend attached: can it wait for one as
   * onIdleMessage would have it wait, with nothing to decide now (transaction pooling, nothing
   * held or being answered by the pooler, no early-data policy)? Then it is held (see plainAttach).
   */
  plainHold(query: Buffer): boolean {
    if (this.phase !== 'idle' || this.router === null || !this.idleAnswers!.empty || this.held.bytes !== 0 || this.early.guards || this.closeWhenAnswered) return false;
    this.held.hold(query);
    this.phase = 'waiting';
    return true;
  }

  /**
   * A backend for a session that waits with one Query held. When onAttached and forward would
   * send it to `b` unchanged and alone (`b` already has the client's parameters, the statement
   * leaves no session state and is no DEALLOCATE), the session is attached as they would leave
   * it, and the Query returned for the driver to send; else null, with nothing changed.
   */
  plainAttach(b: AttachedBackend): Buffer | null {
    const query = this.held.lone;
    const router = this.router;
    if (this.phase !== 'waiting' || query === undefined || query[0] !== MessageType.Query || router === null || this.early.guards || this.stateGuard.pinnedBy !== null) return null;
    if (this.closeAfterRelease || this.tx.status !== 'I' || !this.parameters.matches(b) || startsWithD(query) || sessionStateChange(MessageType.Query, query) !== null) return null;
    this.backend = b;
    this.backendEnding = false;
    this.phase = 'attached';
    this.held.dropWaiting();
    this.tx.attached(false);
    this.tx.plainQuery();
    router.attach(b.sessionState.statementsFor(this.ctx.preparedStatementCacheSize));
    router.plainQuery();
    return query;
  }

  /**
   * The backend answered with messages the session only forwards, ending in ReadyForQuery 'I'.
   * When that answer is all it owed (one request out, nothing else pending), true: the session
   * is idle again, its backend to be released clean, as deliver() and release() would leave it.
   * Else false, with nothing changed.
   */
  plainAnswered(): boolean {
    const router = this.router;
    if (this.phase !== 'attached' || router === null || !this.tx.plainOutstanding || !router.plainAnswerNext || this.stateGuard.pinnedBy !== null || this.closeAfterRelease || this.closeWhenAnswered) return false;
    this.tx.plainReady();
    this.backend = null;
    this.tx.detached();
    router.detach(false);
    this.phase = 'idle';
    return true;
  }
}
