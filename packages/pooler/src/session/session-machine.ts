// One client session as a state machine (no I/O): events in, actions out (ClientSession,
// client-session.ts, adds the plain lane's shortcuts through it). The driver owns the
// stream, the pool and the clock; the session owns the protocol decisions, with its parts beside
// it: startup and authentication (startup-auth.ts), the tracked parameters (parameter-sync.ts),
// where its requests stand (transaction.ts), messages held (held-messages.ts), the session-state
// policy (session-policy.ts) and read-only 0-RTT (early-data.ts). What stays here: the phases,
// when a backend is needed and when it goes back, and what the client sees when something fails.
import { errorResponse, isSessionEndingError, MessageType, SQLSTATE } from '@quicpool/wire';
import type { RawMessage, SqlState } from '@quicpool/wire';
import type { ScramKeys } from '../auth/scram.js';
import { IdleAnswers } from './idle-answers.js';
import { StatementRouter } from '../prepared/statement-router.js';
import { ParameterSync, refusedParameter, resetsParameters } from './parameter-sync.js';
import { sessionLooksAt } from './pass-through.js';
import { SessionStateGuard } from './session-policy.js';
import { EarlyDataGate } from './early-data.js';
import { CLIENT_IDLE_OFF, CLIENT_IDLE_ON, CLOSE, END_BACKEND, IDLE_IN_TRANSACTION_OFF, LOGGED_IN, QUERY_OFF, READY_IDLE, REQUEST_BACKEND, WITHDRAW_REQUEST } from './actions.js';
import { HeldMessages } from './held-messages.js';
import { StartupAuth } from './startup-auth.js';
import type { StartupOwner } from './startup-auth.js';
import { timeoutFailure } from './timeouts.js';
import { TransactionTracker } from './transaction.js';
import type { AttachedBackend, EncodedError, SessionAction, SessionContext, SessionEvent, SessionPhase, SessionTimer } from './types.js';

export class SessionMachine implements StartupOwner {
  phase: SessionPhase = 'startup';
  private out: SessionAction[] = [];
  private readonly startup: StartupAuth;
  protected readonly parameters = new ParameterSync();
  protected readonly tx: TransactionTracker;
  /** Client messages waiting for a backend or for the handshake's confirmation. */
  protected readonly held = new HeldMessages();
  protected backend: AttachedBackend | null = null;
  /** The backend sent a FATAL (or PANIC) error, which the client got: its end needs no error of ours. */
  protected backendEnding = false;
  protected closeAfterRelease = false;
  /**
   * The client ended (Terminate, or the end of its stream) with requests still unanswered. As
   * Postgres, which reads the end only after answering what came before it (or skipping it, after
   * an extended-protocol error), the backend gets the Terminate and the end of its input too: its
   * answers still go to the client, and its close ends the session.
   */
  protected closeWhenAnswered = false;
  /** Transaction pooling only: named prepared statements carried across backends. */
  protected readonly router: StatementRouter | null;
  /** Transaction pooling: prepares of statements the pool knows, answered while no backend is attached. */
  protected readonly idleAnswers: IdleAnswers | null;
  /** Transaction pooling: statements that leave session state, met with the pool's policy. */
  protected readonly stateGuard: SessionStateGuard;
  /** The read-only 0-RTT policy: what may run before the QUIC handshake is confirmed. */
  protected readonly early: EarlyDataGate;

  constructor(protected readonly ctx: SessionContext) {
    this.startup = new StartupAuth(ctx, this);
    this.tx = new TransactionTracker((a) => this.emit(a));
    this.stateGuard = new SessionStateGuard(ctx.sessionStatePolicy ?? 'pin');
    this.early = new EarlyDataGate(ctx.readOnlyEarlyData === true);
    this.router =
      ctx.poolMode === 'transaction'
        ? new StatementRouter({
            toBackend: this.toBackend,
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
  /** What pinned it (the statement, e.g. 'SET', 'PREPARE', 'LISTEN', or the function), or null. */
  get pinnedReason(): string | null {
    return this.stateGuard.pinnedBy;
  }
  /** The read-only early-data policy guards this session (the driver reports the confirmation). */
  get guardsEarlyData(): boolean {
    return this.early.guards;
  }
  /** Client messages wait for the handshake's confirmation. */
  get awaitingConfirmation(): boolean {
    return this.held.anyEarly;
  }
  /** Bytes of client messages waiting for a backend (or for the handshake's confirmation). */
  get pendingBytes(): number {
    return this.held.bytes;
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
        this.startup.loggedIn = true;
        this.emit(LOGGED_IN);
        if (this.held.anyWaiting) this.requestBackend();
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
    if (t === 'authFailure') return this.startup.failureDelayOver();
    const p = this.phase;
    const f = timeoutFailure(t, { loggingIn: p === 'startup' || p === 'authenticating', idle: p === 'idle', idleInTransaction: p === 'attached' && this.tx.idleInTransaction, busy: this.busy });
    if (f !== null) this.fail(f.sqlstate, f.message);
  }

  // --- StartupOwner ----------------------------------------------------------------------------

  authenticated(database: string, user: string, tracked: ReadonlyMap<string, string>, scramKeys: ScramKeys | undefined): void {
    this.parameters.fromStartup(tracked);
    this.stateGuard.policy = this.ctx.sessionStatePolicyFor?.(database) ?? this.stateGuard.policy;
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
    if (this.phase !== 'startup' && this.early.mustWait(type, m.bytes, this.held)) return this.held.holdEarly(m.bytes);
    switch (this.phase) {
      case 'attached':
        return this.forward(type, m.bytes);
      case 'idle':
        return this.onIdleMessage(type, m.bytes);
      case 'connecting':
      case 'waiting':
        return this.held.hold(m.bytes);
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
    const offer = this.idleAnswers?.offer(type, bytes, this.parameters.searchPath, this.tx.status, this.held) ?? 'refused';
    if (offer === 'taken') return;
    if (offer === 'answered') return this.emit(CLIENT_IDLE_ON);
    this.held.hold(bytes);
    return this.requestBackend();
  }

  /** The handshake is confirmed: nothing can be a replay any more; what waited goes on, in order. */
  private onConfirmed(): void {
    if (!this.early.confirm()) return;
    for (const bytes of this.held.takeEarly()) {
      if (this.phase === 'closed') return;
      this.onClientMessage({ type: bytes[0]!, bytes });
    }
  }

  private forward(type: number, message: Buffer): void {
    if (this.early.wraps(type)) return this.early.wrap(this.tx, this.toBackend, () => this.forwardPlain(type, message));
    this.forwardPlain(type, message);
  }

  private forwardPlain(type: number, message: Buffer): void {
    this.tx.forwarded(type);
    const bytes = this.stateGuard.examine(type, message, this.router !== null, this.tx);
    if (this.router !== null) this.router.client(type, bytes, this.parameters.searchPath);
    else this.toBackend(bytes);
  }

  private readonly toBackend = (bytes: Buffer): void => this.emit({ type: 'sendToBackend', bytes });

  private requestBackend(): void {
    this.phase = 'waiting';
    this.emit(REQUEST_BACKEND);
  }

  private onAttached(b: AttachedBackend): void {
    if (this.phase !== 'waiting') return;
    this.backend = b;
    this.backendEnding = false;
    this.phase = 'attached';
    this.tx.attached(this.ctx.poolMode === 'session' || this.stateGuard.pinnedBy !== null);
    if (this.router !== null) this.router.attach(b.sessionState.statementsFor(this.ctx.preparedStatementCacheSize));
    const set = this.parameters.applyTo(b);
    if (set !== null) {
      // The client's tracked parameters, SET where this backend differs; the answers are swallowed.
      this.tx.ownStatement();
      this.emit({ type: 'sendToBackend', bytes: set });
    }
    this.held.forEachWaiting(this.forwardHeld);
  }

  private readonly forwardHeld = (bytes: Buffer): void => this.forward(bytes[0]!, bytes);

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
    if (this.phase !== 'attached' || this.tx.ownAnswersNext || sessionLooksAt(type, buffer, start)) return false;
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
        if (idle && ((this.ctx.poolMode === 'transaction' && this.stateGuard.pinnedBy === null) || this.closeAfterRelease)) this.release();
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
    this.startup.lastError = error;
    // A login that fails this way is reported as loginFailed (see close).
    if (error.sqlstate === SQLSTATE.PROTOCOL_VIOLATION && !this.startup.loginPending) this.emit({ type: 'protocolViolation', reason: error.message });
    this.send(error.bytes);
    this.close();
  }

  close(): void {
    if (this.phase === 'closed') return;
    if (this.phase === 'waiting') this.emit(WITHDRAW_REQUEST);
    this.release();
    this.phase = 'closed';
    this.held.clear();
    this.emit(CLIENT_IDLE_OFF);
    this.emit(IDLE_IN_TRANSACTION_OFF);
    this.emit(QUERY_OFF);
    this.startup.closing();
    if (this.startup.loginPending) this.emit(this.startup.loginFailure());
    this.emit(CLOSE);
  }

  send(bytes: Buffer): void {
    this.emit({ type: 'sendToClient', bytes });
  }

  emit(a: SessionAction): void {
    this.out.push(a);
  }
}
