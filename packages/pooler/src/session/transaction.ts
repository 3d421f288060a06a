// Where the client's conversation with its backend stands: requests (Query, Sync, FunctionCall)
// still owed a ReadyForQuery, an extended-protocol sequence not yet synced, the transaction
// status, and whether the backend's session state was touched. From that follow the facts of a
// release, whether a cancel can interrupt anything, and the per-request timers.
import { MessageType, readyForQueryStatus } from '@quicpool/wire';
import type { TransactionStatus } from '@quicpool/wire';
import { IDLE_IN_TRANSACTION_OFF, IDLE_IN_TRANSACTION_ON, QUERY_OFF, QUERY_ON } from './actions.js';
import type { ReleaseFacts, SessionAction } from './types.js';

/** Parse, Bind, Describe, Execute, Close, Flush: extended-protocol messages that a Sync must end. */
const EXTENDED = new Set<number>([MessageType.Parse, MessageType.Bind, MessageType.Describe, MessageType.Execute, MessageType.Close, MessageType.Flush]);

/** The release of a clean backend (the common case), shared. */
export const CLEAN_RELEASE: ReleaseFacts = { status: 'I', busy: false, dirty: false };

export type ReadyOutcome =
  /** Not a valid ReadyForQuery. */
  | 'malformed'
  /** Requests are still outstanding. */
  | 'pending'
  /** Nothing outstanding; the transaction status is `status`. */
  | 'settled';

/**
 * Whose answer comes next from the backend, for requests that are not plain client requests, in
 * the order they were sent (plain client requests sent after them need no entry: they come last):
 * 'own': a statement of the pooler (SET of tracked parameters, BEGIN READ ONLY): swallowed whole;
 * 'wrapped': a client query inside the pooler's READ ONLY transaction: the client gets its answer
 *   except its ReadyForQuery (whose status says "in a transaction" the client never opened);
 * 'closing': the pooler's COMMIT of that transaction: swallowed, except its ReadyForQuery, which
 *   the client gets in place of the wrapped query's (status idle, as the client expects).
 */
export type AnswerOwner = 'own' | 'wrapped' | 'closing';

export class TransactionTracker {
  /** ReadyForQuery messages still owed by the backend for requests forwarded. */
  private awaitingReady = 0;
  /** Answers owed for the pooler's own and wrapped statements, oldest first (see AnswerOwner). */
  private owners: AnswerOwner[] = [];
  private ownersHead = 0;
  status: TransactionStatus = 'I';
  /** Extended-protocol messages were forwarded and their Sync has not been: the backend is mid-sequence. */
  private unsynced = false;
  /** Session state may have changed (SET, PREPARE, LISTEN ..., or session pooling). */
  dirty = false;
  /** Requests answered by ReadyForQuery since the session started. */
  queriesAnswered = 0;
  /**
   * Syncs forwarded since the last Execute, Query or FunctionCall, and before a CopyDone/CopyFail:
   * if that statement was a COPY FROM STDIN, the backend was in copy-in mode when they came and
   * ignored them (pg8000 sends Execute, Flush, Sync before its COPY data). See copyInStarted.
   */
  private syncsSinceStatement = 0;
  private copyEnded = false;

  constructor(private readonly emit: (a: SessionAction) => void) {}

  /** A backend was attached: nothing outstanding on it yet. */
  attached(dirty: boolean): void {
    this.awaitingReady = 0;
    this.clearOwners();
    this.unsynced = false;
    this.status = 'I';
    this.dirty = dirty;
  }

  /** A request is outstanding or a sequence unsynced: a cancel would interrupt something. */
  get running(): boolean {
    return this.awaitingReady > 0 || this.unsynced;
  }

  /** Requests forwarded are still owed a ReadyForQuery. */
  get awaitingAnswers(): boolean {
    return this.awaitingReady > 0;
  }

  /** A client message of `type` goes to the backend. */
  forwarded(type: number): void {
    if (type === MessageType.Query || type === MessageType.Sync || type === MessageType.FunctionCall) {
      if (this.awaitingReady === 0) {
        if (this.status !== 'I') this.emit(IDLE_IN_TRANSACTION_OFF);
        this.emit(QUERY_ON);
      }
      this.awaitingReady++;
      if (type === MessageType.Sync) {
        this.unsynced = false;
        if (!this.copyEnded) this.syncsSinceStatement++;
      } else {
        this.statementForwarded();
      }
    } else if (EXTENDED.has(type)) {
      this.unsynced = true;
      if (type === MessageType.Execute) this.statementForwarded();
    } else if (type === MessageType.CopyDone || type === MessageType.CopyFail) {
      this.copyEnded = true;
    }
  }

  private statementForwarded(): void {
    this.syncsSinceStatement = 0;
    this.copyEnded = false;
  }

  /**
   * The backend answered CopyInResponse: the Syncs the client sent since the statement and before
   * its CopyDone/CopyFail were ignored (Postgres ignores Sync and Flush in copy-in mode) and owe
   * no ReadyForQuery. Returns how many.
   */
  copyInStarted(): number {
    const n = Math.min(this.syncsSinceStatement, this.awaitingReady);
    this.awaitingReady -= n;
    this.syncsSinceStatement = 0;
    return n;
  }

  /**
   * The pooler sent a statement of its own ('own', 'closing'), or is about to forward a client
   * query inside its own transaction ('wrapped'). Only before any plain client request is
   * outstanding: those would answer first, and have no entry.
   */
  ownStatement(owner: AnswerOwner = 'own'): void {
    this.owners.push(owner);
  }

  /** Answers of the pooler's own or wrapped statements come next (swallows decides about each). */
  get ownAnswersNext(): boolean {
    return this.ownersHead !== this.owners.length;
  }

  /** True for a backend message the client must not see (see AnswerOwner). */
  swallows(type: number): boolean {
    if (this.ownersHead === this.owners.length) return false;
    const owner = this.owners[this.ownersHead]!;
    const ready = type === MessageType.ReadyForQuery;
    if (ready) this.ownersHead++;
    if (this.ownersHead === this.owners.length) this.clearOwners();
    switch (owner) {
      case 'own':
        return true;
      case 'wrapped':
        return ready;
      case 'closing':
        return !ready;
      default: {
        const never: never = owner;
        throw new Error(`unknown answer owner ${String(never)}`);
      }
    }
  }

  private clearOwners(): void {
    // Nearly always empty; setting an array's length is a call into V8's runtime.
    if (this.owners.length > 0) this.owners.length = 0;
    this.ownersHead = 0;
  }

  /** A prepared-statement router dropped a ReadyForQuery it generated the request for. */
  readyDropped(): void {
    if (this.awaitingReady > 0) this.awaitingReady--;
  }

  /** The backend's ReadyForQuery for the client. */
  ready(bytes: Buffer): ReadyOutcome {
    const status = readyForQueryStatus(bytes);
    if (status === undefined) return 'malformed';
    this.status = status;
    if (this.awaitingReady > 0) {
      this.awaitingReady--;
      this.queriesAnswered++;
    }
    if (this.awaitingReady > 0 || this.unsynced) return 'pending';
    this.emit(QUERY_OFF);
    if (status !== 'I') this.emit(IDLE_IN_TRANSACTION_ON);
    return 'settled';
  }

  /**
   * The plain lane (driver/plain-lane.md): a lone Query goes out on a backend just attached, idle.
   * What forwarded(Query) does then, except the QUERY_ON it emits: the driver times the request itself.
   */
  plainQuery(): void {
    this.awaitingReady = 1;
    this.statementForwarded();
  }

  /** The plain lane: exactly one request is out, and nothing else (no sequence unsynced, no answers of the pooler's, no session state touched). */
  get plainOutstanding(): boolean {
    return this.awaitingReady === 1 && !this.unsynced && this.ownersHead === this.owners.length && !this.dirty;
  }

  /** The plain lane: its ReadyForQuery 'I' came. What ready() does then, except the QUERY_OFF it emits. */
  plainReady(): void {
    this.status = 'I';
    this.awaitingReady = 0;
    this.queriesAnswered++;
  }

  /** What the pool needs to know to take the backend back; `extraPending`: more answers are owed elsewhere. */
  releaseFacts(extraPending: boolean): ReleaseFacts {
    const busy = this.awaitingReady > 0 || this.ownersHead < this.owners.length || this.unsynced || extraPending;
    return !busy && !this.dirty && this.status === 'I' ? CLEAN_RELEASE : { status: this.status, busy, dirty: this.dirty };
  }

  /** The backend is gone or given back: the per-request timers stop. */
  detached(): void {
    this.clearOwners();
  }

  /** Idle inside a transaction, nothing outstanding (what idleInTransaction times). */
  get idleInTransaction(): boolean {
    return this.awaitingReady === 0 && this.status !== 'I';
  }
}
