// One client session as a state machine (no I/O): events in, actions out. The driver owns the
// stream, the pool and the clock; the session owns the protocol decisions, composed of three
// pieces: startup and authentication (startup-auth.ts), the client's tracked parameters
// (parameter-sync.ts) and where its requests stand (transaction.ts). What stays here: the
// phases, client messages held while no backend is attached, when a backend is needed and when it
// goes back, the session-state policy, and what the client sees when something fails.
import { encodeBackend, errorResponse, isSessionEndingError, MessageType, SQLSTATE } from '@quicpool/wire';
import type { RawMessage, SqlState } from '@quicpool/wire';
import type { ScramKeys } from '../auth/scram.js';
import { IdleAnswers } from './idle-answers.js';
import { StatementRouter } from '../prepared/statement-router.js';
import { BackendStatements } from '../prepared/statement-cache.js';
import { ParameterSync, refusedParameter, resetsParameters } from './parameter-sync.js';
import { mayChangeSessionState, sessionStateChange } from './session-state-change.js';
import { rejectedStatement } from './session-policy.js';
import { BEGIN_READ_ONLY, COMMIT, runsBeforeConfirmation } from './read-only-early.js';
import { StartupAuth } from './startup-auth.js';
import type { StartupOwner } from './startup-auth.js';
import { TransactionTracker } from './transaction.js';
import type { AttachedBackend, EncodedError, SessionAction, SessionContext, SessionEvent, SessionStatePolicy, SessionTimer } from './types.js';

export type SessionPhase =
  | 'startup' // waiting for the StartupMessage (after optional SSLRequest/GSSENCRequest)
  | 'authenticating'
  | 'connecting' // authenticated, waiting for the pool's server parameters
  | 'idle' // no backend attached
  | 'waiting' // a backend was requested
  | 'attached'
  | 'closed';

const timer = (t: SessionTimer, armed: boolean): SessionAction => ({ type: 'timer', timer: t, armed });
const CLIENT_IDLE_ON = timer('clientIdle', true);
const CLIENT_IDLE_OFF = timer('clientIdle', false);
const IDLE_IN_TRANSACTION_OFF = timer('idleInTransaction', false);
const QUERY_OFF = timer('query', false);
const REQUEST_BACKEND: SessionAction = { type: 'requestBackend' };
const WITHDRAW_REQUEST: SessionAction = { type: 'withdrawRequest' };
const LOGGED_IN: SessionAction = { type: 'loggedIn' };
const CLOSE: SessionAction = { type: 'close' };
const END_BACKEND: SessionAction = { type: 'endBackend' };
const READY_IDLE = encodeBackend({ type: 'ReadyForQuery', status: 'I' });

export class ClientSession implements StartupOwner {
  phase: SessionPhase = 'startup';
  private out: SessionAction[] = [];
  private readonly startup: StartupAuth;
  private readonly parameters = new ParameterSync();
  private readonly tx: TransactionTracker;
  /** Client messages received while no backend is attached (bounded by the driver pausing reads). */
  private pending: Buffer[] = [];
  /** Their total size (the driver stops reading the client when too much waits). */
  private pendingSize = 0;
  /** The other of the two `pending` arrays (swapped at attach: none allocated per transaction). */
  private spare: Buffer[] = [];
  private backend: AttachedBackend | null = null;
  /** The backend sent a FATAL (or PANIC) error, which the client got: its end needs no error of ours. */
  private backendEnding = false;
  private closeAfterRelease = false;
  /**
   * The client ended (Terminate, or the end of its stream) with requests still unanswered. As
   * Postgres, which reads the end only after answering what came before it (or skipping it, after
   * an extended-protocol error), the backend gets the Terminate and the end of its input too: its
   * answers still go to the client, and its close ends the session.
   */
  private closeWhenAnswered = false;
  /** Transaction pooling only: named prepared statements carried across backends. */
  private readonly router: StatementRouter | null;
  /** Transaction pooling: prepares of statements the pool knows, answered while no backend is attached. */
  private readonly idleAnswers: IdleAnswers | null;
  /** The client left session state on its backend (policy 'pin'): what did (e.g. 'SET'); it keeps the backend until it goes. */
  private pinnedBy: string | null = null;
  /** The pool's session-state policy, per database (known once authenticated). */
  private policy: SessionStatePolicy;
  private authenticatedOnce = false;
  private loggedIn = false;
  /** Read-only 0-RTT policy: the handshake is not confirmed yet (see SessionContext.readOnlyEarlyData). */
  private unconfirmed: boolean;
  /** Client messages that wait for the handshake's confirmation, in order (the first one could not run early). */
  private early: Buffer[] = [];
  /** The FATAL error the session sent last (what a failed login reports). */
  private lastError: { readonly sqlstate: string; readonly message: string } | null = null;

  constructor(private readonly ctx: SessionContext) {
    this.startup = new StartupAuth(ctx, this);
    this.tx = new TransactionTracker((a) => this.emit(a));
    this.policy = ctx.sessionStatePolicy ?? 'pin';
    this.unconfirmed = ctx.readOnlyEarlyData === true;
    this.router =
      ctx.poolMode === 'transaction'
        ? new StatementRouter({
            toBackend: (bytes) => this.emit({ type: 'sendToBackend', bytes }),
            toClient: (bytes) => this.send(bytes),
            pass: (type, bytes) => this.deliver(type, bytes),
            readyDropped: () => this.tx.readyDropped(),
          })
        : null;
    this.idleAnswers = this.router === null ? null : new IdleAnswers(this.router, (bytes) => this.send(bytes));
  }

  get database(): string {
    return this.startup.database;
  }
  get user(): string {
    return this.startup.user;
  }
  /** Minor protocol version agreed with the client (0 or 2). */
  get protocolMinor(): number {
    return this.startup.protocolMinor;
  }
  /** Requests (Query, Sync, FunctionCall) answered by ReadyForQuery, since the session started. */
  get queriesAnswered(): number {
    return this.tx.queriesAnswered;
  }
  /** The client's backend is pinned to it by the session-state policy. */
  get isPinned(): boolean {
    return this.pinnedBy !== null;
  }
  /** What pinned it (the statement, e.g. 'SET', 'PREPARE', 'LISTEN', or the function), or null. */
  get pinnedReason(): string | null {
    return this.pinnedBy;
  }
  /** The read-only early-data policy guards this session (the driver reports the confirmation). */
  get guardsEarlyData(): boolean {
    return this.ctx.readOnlyEarlyData === true;
  }
  /** Client messages wait for the handshake's confirmation. */
  get awaitingConfirmation(): boolean {
    return this.early.length > 0;
  }
  /** Bytes of client messages waiting for a backend (or for the handshake's confirmation). */
  get pendingBytes(): number {
    return this.pendingSize;
  }
  /** Named prepared statements the client has (transaction pooling). */
  get preparedStatementCount(): number {
    return this.router?.statementCount ?? 0;
  }
  get hasBackend(): boolean {
    return this.backend !== null;
  }
  /** A request is on the backend right now (what a CancelRequest may interrupt). */
  get busy(): boolean {
    return this.backend !== null && this.tx.running;
  }

  /** Feeds one event; returns the actions to carry out, in order. */
  handle(event: SessionEvent): SessionAction[] {
    this.out = [];
    if (this.phase !== 'closed') this.dispatch(event);
    return this.out;
  }

  private dispatch(e: SessionEvent): void {
    switch (e.type) {
      case 'startupPacket':
        if (this.phase !== 'startup') return this.fail(SQLSTATE.PROTOCOL_VIOLATION, 'unexpected startup packet');
        this.startup.startupPacket(e.packet);
        if (this.phase === 'startup' && this.startup.admitted) this.phase = 'authenticating';
        return;
      case 'clientMessage':
        return this.onClientMessage(e.message);
      case 'serverParameters': {
        if (this.phase !== 'connecting') return;
        if (this.router !== null && e.prepared !== undefined) this.router.registry = e.prepared;
        for (const bytes of this.parameters.greeting(e.parameters, e.cancelKey)) this.send(bytes);
        this.send(READY_IDLE);
        this.phase = 'idle';
        this.loggedIn = true;
        this.emit(LOGGED_IN);
        if (this.pending.length > 0) this.requestBackend();
        else this.emit(CLIENT_IDLE_ON);
        return;
      }
      case 'backendAttached':
        return this.onAttached(e.backend);
      case 'backendMessage':
        return this.onBackendMessage(e.message);
      case 'backendLost':
        if (this.backend === null) return;
        this.backend = null;
        // After the server's own FATAL (pg_terminate_backend, shutdown), a second error would be
        // noise that clients may even report instead of the server's. After the client's own end,
        // the backend's close is the expected end.
        if (this.backendEnding || this.closeWhenAnswered) return this.close();
        return this.fail(SQLSTATE.CONNECTION_FAILURE, `server connection lost: ${e.reason}`);
      case 'backendUnavailable':
        if (this.phase !== 'waiting' && this.phase !== 'connecting') return;
        this.phase = 'idle'; // the request is answered: nothing to withdraw
        return this.failWith(e.error);
      case 'protocolError':
        if (this.startup.holdingFailure) return; // the failure delay runs out first
        return this.fail(SQLSTATE.PROTOCOL_VIOLATION, e.message);
      case 'timeout':
        return this.onTimeout(e.timer);
      case 'clientClosed':
        // A guesser that hangs up early still holds its admission until the failure delay ends.
        if (this.startup.holdingFailure) return;
        // Its end after a Terminate: the answers still owed go out first (they may still be read).
        if (this.closeWhenAnswered) return;
        return this.close();
      case 'handshakeConfirmed':
        return this.onConfirmed();
      case 'shutdown':
        if (e.graceful && this.phase === 'attached' && (this.tx.running || this.tx.status !== 'I')) {
          this.closeAfterRelease = true;
          return;
        }
        return this.fail(SQLSTATE.ADMIN_SHUTDOWN, 'terminating connection due to administrator command');
      default: {
        const never: never = e;
        throw new Error(`unhandled session event ${JSON.stringify(never)}`);
      }
    }
  }

  private onTimeout(t: SessionTimer): void {
    switch (t) {
      case 'authFailure':
        return this.startup.failureDelayOver();
      case 'authentication':
        if (this.phase === 'startup' || this.phase === 'authenticating') return this.fail(SQLSTATE.QUERY_CANCELED, 'canceling authentication due to timeout');
        return;
      case 'clientIdle':
        if (this.phase === 'idle') return this.fail(SQLSTATE.IDLE_SESSION_TIMEOUT, 'terminating connection due to idle-session timeout');
        return;
      case 'idleInTransaction':
        if (this.phase === 'attached' && this.tx.idleInTransaction) {
          return this.fail(SQLSTATE.IDLE_IN_TRANSACTION_SESSION_TIMEOUT, 'terminating connection due to idle-in-transaction timeout');
        }
        return;
      case 'query':
        if (this.busy) return this.fail(SQLSTATE.QUERY_CANCELED, 'query_timeout: the server did not answer in time; the server connection is closed');
        return;
      default: {
        const never: never = t;
        throw new Error(`unknown timer ${String(never)}`);
      }
    }
  }

  // --- StartupOwner ----------------------------------------------------------------------------

  authenticated(database: string, user: string, tracked: ReadonlyMap<string, string>, scramKeys: ScramKeys | undefined): void {
    this.parameters.fromStartup(tracked);
    this.policy = this.ctx.sessionStatePolicyFor?.(database) ?? this.policy;
    this.authenticatedOnce = true;
    this.phase = 'connecting';
    this.emit(scramKeys === undefined ? { type: 'authenticated', database, user } : { type: 'authenticated', database, user, scramKeys });
  }

  // --- client messages -------------------------------------------------------------------------

  private onClientMessage(m: RawMessage): void {
    const type = m.type;
    if (this.phase === 'authenticating') return this.startup.authResponse(m);
    if (type === MessageType.AuthenticationResponse) return this.fail(SQLSTATE.PROTOCOL_VIOLATION, 'unexpected authentication response');
    if (this.closeWhenAnswered) return; // nothing follows a Terminate
    if (type === MessageType.Terminate) return this.terminate();
    if (this.unconfirmed && this.phase !== 'startup' && (this.early.length > 0 || !runsBeforeConfirmation(type, m.bytes))) {
      // Read-only 0-RTT policy: this (and everything after it, to keep the order) waits.
      this.early.push(m.bytes);
      this.pendingSize += m.bytes.length;
      return;
    }
    switch (this.phase) {
      case 'attached':
        return this.forward(type, m.bytes);
      case 'idle':
        return this.onIdleMessage(type, m.bytes);
      case 'connecting':
      case 'waiting':
        this.hold(m.bytes);
        return;
      case 'startup':
        return this.fail(SQLSTATE.PROTOCOL_VIOLATION, 'expected a startup packet');
      case 'closed':
        return;
      default: {
        const never: never = this.phase;
        throw new Error(`unhandled phase ${String(never)}`);
      }
    }
  }

  /**
   * Terminate: the end, once what the client sent before it has been answered (see
   * closeWhenAnswered). Requests still waiting for a backend reached no server: they are dropped
   * with the session (a client that gave up while queued must not cost a backend later).
   */
  private terminate(): void {
    if (this.phase !== 'attached' || !this.tx.awaitingAnswers) return this.close();
    this.closeWhenAnswered = true;
    this.emit(END_BACKEND);
  }

  /** A client message with no backend attached: answered by the pooler if it can, else a backend is requested. */
  private onIdleMessage(type: number, bytes: Buffer): void {
    this.emit(CLIENT_IDLE_OFF);
    if (this.idleAnswers !== null) {
      const offer = this.idleAnswers.offer(type, bytes, this.parameters.searchPath, this.tx.status);
      switch (offer) {
        case 'taken':
          return;
        case 'answered':
          this.emit(CLIENT_IDLE_ON);
          return;
        case 'refused':
          for (const earlier of this.idleAnswers.giveBack()) this.hold(earlier);
          break;
        default: {
          const never: never = offer;
          throw new Error(`unhandled offer ${String(never)}`);
        }
      }
    }
    this.hold(bytes);
    return this.requestBackend();
  }

  private hold(bytes: Buffer): void {
    this.pending.push(bytes);
    this.pendingSize += bytes.length;
  }

  /** The handshake is confirmed: nothing can be a replay any more; what waited goes on, in order. */
  private onConfirmed(): void {
    if (!this.unconfirmed) return;
    this.unconfirmed = false;
    const early = this.early;
    this.early = [];
    for (const bytes of early) {
      this.pendingSize -= bytes.length;
      if (this.phase === 'closed') return;
      this.onClientMessage({ type: bytes[0]!, bytes });
    }
  }

  private forward(type: number, message: Buffer): void {
    if (this.unconfirmed && type === MessageType.Query) return this.forwardReadOnly(message);
    this.forwardPlain(type, message);
  }

  /**
   * Before confirmation (read-only policy; only single read-only statements get here): the query
   * runs inside `BEGIN READ ONLY` ... `COMMIT` of the pooler's own, whose answers the client
   * never sees, except the COMMIT's ReadyForQuery in place of the query's (status idle).
   */
  private forwardReadOnly(message: Buffer): void {
    this.tx.ownStatement('own');
    this.emit({ type: 'sendToBackend', bytes: BEGIN_READ_ONLY });
    this.tx.ownStatement('wrapped');
    this.forwardPlain(MessageType.Query, message);
    this.tx.ownStatement('closing');
    this.emit({ type: 'sendToBackend', bytes: COMMIT });
  }

  private forwardPlain(type: number, message: Buffer): void {
    let bytes = message;
    this.tx.forwarded(type);
    // Examined once (it scans the text): with the router the policy decides, without it only `dirty` matters.
    if (type === MessageType.Query || type === MessageType.Parse) {
      if (this.router !== null) {
        const change = sessionStateChange(type, bytes);
        if (change !== null) bytes = this.onSessionState(type, bytes, change);
      } else if (!this.tx.dirty && mayChangeSessionState(type, bytes)) {
        this.tx.dirty = true;
      }
    }
    if (this.router !== null) this.router.client(type, bytes, this.parameters.searchPath);
    else this.emit({ type: 'sendToBackend', bytes });
  }

  /** Transaction pooling: the client runs something that leaves session state; apply the policy. */
  private onSessionState(type: number, bytes: Buffer, change: string): Buffer {
    switch (this.policy) {
      case 'pin':
        this.pinnedBy ??= change;
        this.tx.dirty = true;
        return bytes;
      case 'reset':
        this.tx.dirty = true;
        return bytes;
      case 'reject':
        return rejectedStatement(type, bytes);
      default: {
        const never: never = this.policy;
        throw new Error(`unknown session state policy ${String(never)}`);
      }
    }
  }

  private requestBackend(): void {
    this.phase = 'waiting';
    this.emit(REQUEST_BACKEND);
  }

  private onAttached(b: AttachedBackend): void {
    if (this.phase !== 'waiting') return;
    this.backend = b;
    this.backendEnding = false;
    this.phase = 'attached';
    this.tx.attached(this.ctx.poolMode === 'session' || this.pinnedBy !== null);
    if (this.router !== null) this.router.attach((b.sessionState.statements ??= new BackendStatements(this.ctx.preparedStatementCacheSize ?? 1000)));
    const set = this.parameters.applyTo(b);
    if (set !== null) {
      // The client's tracked parameters, SET where this backend differs; the answers are swallowed.
      this.tx.ownStatement();
      this.emit({ type: 'sendToBackend', bytes: set });
    }
    // The two pending arrays swap roles: forwarding queues nothing (attached), but stays correct if it did.
    const pending = this.pending;
    this.pending = this.spare;
    this.pendingSize = 0;
    for (let i = 0; i < pending.length; i++) {
      const bytes = pending[i]!;
      this.forward(bytes[0]!, bytes);
    }
    // Emptied by pop (inlined) rather than `length = 0` (a call into V8's runtime): it holds one or two.
    while (pending.length > 0) pending.pop();
    this.spare = pending;
  }

  // --- backend messages ------------------------------------------------------------------------

  private onBackendMessage(m: RawMessage): void {
    if (this.phase !== 'attached') return;
    if (this.tx.swallows(m.type)) {
      // Answers to the pooler's own SET of the client's parameters. One refused (a startup value
      // the server does not accept) is what Postgres would have refused the login with.
      if (m.type === MessageType.ErrorResponse) this.failWith(refusedParameter(m.bytes));
      return;
    }
    if (m.type === MessageType.CopyInResponse) {
      const ignored = this.tx.copyInStarted();
      if (ignored > 0) this.router?.syncsIgnored(ignored);
    }
    if (this.router !== null) this.router.backend(m.type, m.bytes);
    else this.deliver(m.type, m.bytes);
  }

  /**
   * Does the client get this backend message unchanged, with nothing else to do: a row, a row
   * description, a plain CommandComplete, a notice? The message is `buffer[start, ...)`; asking
   * changes nothing. True means the driver writes it to the client itself, without an event (what
   * `backendMessage` would do with it, for a fraction of the cost).
   */
  passesThrough(type: number, buffer: Buffer, start: number): boolean {
    if (this.phase !== 'attached' || this.tx.ownAnswersNext) return false;
    switch (type) {
      case MessageType.ErrorResponse:
      case MessageType.ParameterStatus:
      case MessageType.ReadyForQuery:
      case MessageType.CopyInResponse: // the Syncs it makes the backend ignore: see onBackendMessage
        return false;
      case MessageType.CommandComplete: {
        const tag = buffer[start + 5]; // RESET ALL and DISCARD ALL: see deliver
        if (tag === 0x52 || tag === 0x44) return false;
        break;
      }
      default:
        break;
    }
    return this.router === null || this.router.passesThrough(type, buffer, start);
  }

  /** A backend message that answers the client. */
  private deliver(type: number, bytes: Buffer): void {
    if (type === MessageType.ErrorResponse && isSessionEndingError(bytes)) this.backendEnding = true;
    // RESET ALL / DISCARD ALL by the client: the backend's unreported parameters are not what the pooler SET.
    if (type === MessageType.CommandComplete && (bytes[5] === 0x52 || bytes[5] === 0x44) && resetsParameters(bytes) && this.backend !== null) this.backend.sessionState.settingsReset();
    if (type === MessageType.ParameterStatus) {
      this.parameters.observe(bytes);
    } else if (type === MessageType.ReadyForQuery) {
      const outcome = this.tx.ready(bytes);
      if (outcome === 'malformed') return this.fail(SQLSTATE.PROTOCOL_VIOLATION, 'malformed ReadyForQuery from server');
      this.send(bytes);
      if (this.closeWhenAnswered) return; // the backend closes next
      if (outcome === 'settled') {
        const idle = this.tx.status === 'I';
        if (idle && ((this.ctx.poolMode === 'transaction' && this.pinnedBy === null) || this.closeAfterRelease)) this.release();
        // Graceful shutdown: the transaction has ended (and the backend is back): now close.
        if (this.closeAfterRelease && idle) this.fail(SQLSTATE.ADMIN_SHUTDOWN, 'terminating connection due to administrator command');
      }
      return;
    }
    this.send(bytes);
  }

  private release(): void {
    if (this.backend === null) return;
    const facts = this.tx.releaseFacts((this.router?.pending ?? 0) > 0);
    this.backend = null;
    this.tx.detached();
    // A dirty backend is reset (DISCARD ALL) before reuse: its prepared statements go with it.
    this.router?.detach(facts.dirty || facts.busy);
    this.emit({ type: 'releaseBackend', facts });
    if (this.phase === 'attached') {
      this.phase = 'idle';
      this.emit(CLIENT_IDLE_ON);
    }
  }

  // --- the end ---------------------------------------------------------------------------------

  /** ErrorResponse FATAL, then close. */
  fail(sqlstate: SqlState, message: string): void {
    if (this.phase === 'closed') return;
    this.failWith({ bytes: errorResponse('FATAL', sqlstate, message), sqlstate, message });
  }

  private failWith(error: EncodedError): void {
    if (this.phase === 'closed') return;
    this.lastError = error;
    // A login that fails this way is reported as loginFailed (see close).
    if (error.sqlstate === SQLSTATE.PROTOCOL_VIOLATION && !(this.startup.admitted && !this.loggedIn)) this.emit({ type: 'protocolViolation', reason: error.message });
    this.send(error.bytes);
    this.close();
  }

  close(): void {
    if (this.phase === 'closed') return;
    if (this.phase === 'waiting') this.emit(WITHDRAW_REQUEST);
    this.release();
    this.phase = 'closed';
    this.pending = [];
    this.early = [];
    this.pendingSize = 0;
    this.emit(CLIENT_IDLE_OFF);
    this.emit(IDLE_IN_TRANSACTION_OFF);
    this.emit(QUERY_OFF);
    this.startup.closing();
    if (this.startup.admitted && !this.loggedIn) this.emitLoginFailure();
    this.emit(CLOSE);
  }

  /** An admitted client ends before its login completed: say where and why. */
  private emitLoginFailure(): void {
    const stage = this.authenticatedOnce ? 'server login' : 'authentication';
    const e = this.lastError;
    let reason = e?.message ?? `the client closed the connection during ${stage}`;
    // The client only learns "password authentication failed"; the operator also learns why.
    if (stage === 'authentication' && this.ctx.lookupUser(this.user) === undefined) reason += ` (${this.ctx.describeUnknownUser?.(this.user) ?? 'no such user in the config'})`;
    this.emit({ type: 'loginFailed', stage, sqlstate: e?.sqlstate ?? null, reason });
  }

  send(bytes: Buffer): void {
    this.emit({ type: 'sendToClient', bytes });
  }

  emit(a: SessionAction): void {
    this.out.push(a);
  }
}
