// Where the client's conversation with its backend stands: requests (Query, Sync, FunctionCall)
// still owed a ReadyForQuery, an extended-protocol sequence not yet synced, the transaction
// status, and whether the backend's session state was touched. From that follow the facts of a
// release, whether a cancel can interrupt anything, and the per-request timers.
import { MessageType, readyForQueryStatus } from '@quicpool/wire';
import type { TransactionStatus } from '@quicpool/wire';
import type { ReleaseFacts, SessionAction, SessionTimer } from './types.js';

/** Parse, Bind, Describe, Execute, Close, Flush: extended-protocol messages that a Sync must end. */
const EXTENDED = new Set<number>([MessageType.Parse, MessageType.Bind, MessageType.Describe, MessageType.Execute, MessageType.Close, MessageType.Flush]);

/** Timer actions carry no per-use data: one shared object each (the hot path allocates none). */
const timer = (t: SessionTimer, armed: boolean): SessionAction => ({ type: 'timer', timer: t, armed });
const QUERY_ON = timer('query', true);
const QUERY_OFF = timer('query', false);
const IDLE_IN_TRANSACTION_ON = timer('idleInTransaction', true);
const IDLE_IN_TRANSACTION_OFF = timer('idleInTransaction', false);
/** The release of a clean backend (the common case), shared. */
const CLEAN_RELEASE: ReleaseFacts = { status: 'I', busy: false, dirty: false };

export type ReadyOutcome =
  /** Not a valid ReadyForQuery. */
  | 'malformed'
  /** Requests are still outstanding. */
  | 'pending'
  /** Nothing outstanding; the transaction status is `status`. */
  | 'settled';

export class TransactionTracker {
  /** ReadyForQuery messages still owed by the backend for requests forwarded. */
  private awaitingReady = 0;
  /** ReadyForQuery messages of the pooler's own statements (SET of tracked parameters), swallowed. */
  private swallowReady = 0;
  status: TransactionStatus = 'I';
  /** Extended-protocol messages were forwarded and their Sync has not been: the backend is mid-sequence. */
  private unsynced = false;
  /** Session state may have changed (SET, PREPARE, LISTEN ..., or session pooling). */
  dirty = false;
  /** Requests answered by ReadyForQuery since the session started. */
  queriesAnswered = 0;

  constructor(private readonly emit: (a: SessionAction) => void) {}

  /** A backend was attached: nothing outstanding on it yet. */
  attached(dirty: boolean): void {
    this.awaitingReady = 0;
    this.swallowReady = 0;
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
      if (type === MessageType.Sync) this.unsynced = false;
    } else if (EXTENDED.has(type)) {
      this.unsynced = true;
    }
  }

  /** The pooler sent a statement of its own: its ReadyForQuery is not the client's. */
  ownStatement(): void {
    this.swallowReady++;
  }

  /** True for a backend message that answers the pooler's own statement (the client never sees it). */
  swallows(type: number): boolean {
    if (this.swallowReady === 0) return false;
    if (type === MessageType.ReadyForQuery) this.swallowReady--;
    return true;
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

  /** What the pool needs to know to take the backend back; `extraPending`: more answers are owed elsewhere. */
  releaseFacts(extraPending: boolean): ReleaseFacts {
    const busy = this.awaitingReady > 0 || this.swallowReady > 0 || this.unsynced || extraPending;
    return !busy && !this.dirty && this.status === 'I' ? CLEAN_RELEASE : { status: this.status, busy, dirty: this.dirty };
  }

  /** The backend is gone or given back: the per-request timers stop. */
  detached(): void {
    this.swallowReady = 0;
  }

  /** Idle inside a transaction, nothing outstanding (what idleInTransaction times). */
  get idleInTransaction(): boolean {
    return this.awaitingReady === 0 && this.status !== 'I';
  }
}
