// One client session as a state machine (no I/O): events in, actions out. The driver owns the
// stream, the pool and the clock; this class owns the protocol decisions: startup, auth, when a
// backend is needed, when it can be given back, and what the client sees when something fails.
import {
  decodeBackendMessage,
  decodeFrontendMessage,
  encodeBackend,
  encodeFrontend,
  errorResponse,
  readyForQueryStatus,
  SQLSTATE,
} from '@quicpool/wire';
import type { AuthenticationResponseKind, RawMessage, StartupMessage, StartupPacket, TransactionStatus } from '@quicpool/wire';
import { ClientAuthenticator } from '../auth/client-auth.js';
import { canonicalTrackedName, checkStartupParameters, setStatements } from './startup-parameters.js';
import { mayChangeSessionState } from './session-state-change.js';
import type { AttachedBackend, ReleaseFacts, SessionAction, SessionContext, SessionEvent, SessionStatePolicy, SessionTimer } from './types.js';
import { StatementRouter } from '../prepared/statement-router.js';
import { statementsOf } from '../prepared/statement-cache.js';
import { rejectedStatement } from './session-policy.js';

export type SessionPhase =
  | 'startup' // waiting for the StartupMessage (after optional SSLRequest/GSSENCRequest)
  | 'authenticating'
  | 'connecting' // authenticated, waiting for the pool's server parameters
  | 'idle' // no backend attached
  | 'waiting' // a backend was requested
  | 'attached'
  | 'closed';

const T_QUERY = 0x51;
const T_SYNC = 0x53;
const T_FUNCTION_CALL = 0x46;
const T_TERMINATE = 0x58;
const T_PARSE = 0x50;
/** Parse, Bind, Describe, Execute, Close, Flush: extended-protocol messages that a Sync must end. */
const EXTENDED = new Set([0x50, 0x42, 0x44, 0x45, 0x43, 0x48]);
const T_AUTH = 0x70;
const B_READY = 0x5a;
const B_PARAMETER_STATUS = 0x53;

/** Timer actions carry no per-use data: one shared object each (the hot path allocates none). */
const timerActions = (timer: SessionTimer): { readonly on: SessionAction; readonly off: SessionAction } => ({
  on: { type: 'timer', timer, armed: true },
  off: { type: 'timer', timer, armed: false },
});
const TIMER = {
  authentication: timerActions('authentication'),
  clientIdle: timerActions('clientIdle'),
  idleInTransaction: timerActions('idleInTransaction'),
  query: timerActions('query'),
} as const;
/** The release of a clean backend (the common case), shared. */
const CLEAN_RELEASE: ReleaseFacts = { status: 'I', busy: false, dirty: false };
const REQUEST_BACKEND: SessionAction = { type: 'requestBackend' };

const SSL_NO = Buffer.from('N');
const SSL_YES = Buffer.from('S');
const READY_IDLE = encodeBackend({ type: 'ReadyForQuery', status: 'I' });

export class ClientSession {
  phase: SessionPhase = 'startup';
  database = '';
  user = '';
  /** Minor protocol version agreed with the client (0 or 2). */
  protocolMinor = 0;
  private out: SessionAction[] = [];
  private sslAnswered = false;
  private encrypted: boolean;
  private auth: ClientAuthenticator | null = null;
  private authExpect: AuthenticationResponseKind | undefined;
  /** A failed login held back for the auth-failure delay (the client waits, its input is discarded). */
  private authFailure: { readonly sqlstate: string; readonly message: string } | null = null;
  /** The client's values of tracked parameters: re-applied on every backend it gets. */
  private readonly tracked = new Map<string, string>();
  /**
   * `tracked` as one string (null: to be computed). A backend remembers the signature it last
   * matched at which version of its parameters, so attaching it again compares two strings
   * instead of every tracked parameter.
   */
  private trackedSignature: string | null = null;
  /** The client's search_path (the scope of its prepared statement names), cached from `tracked`. */
  private searchPath = '';
  /** Client messages received while no backend is attached (bounded by the driver pausing reads). */
  private pending: Buffer[] = [];
  /** Their total size (the driver stops reading the client when too much waits). */
  private pendingSize = 0;
  /** The other of the two `pending` arrays (swapped at attach: none allocated per transaction). */
  private spare: Buffer[] = [];
  /** Requests (Query, Sync, FunctionCall) answered by ReadyForQuery, since the session started. */
  queriesAnswered = 0;
  private backend: AttachedBackend | null = null;
  /** ReadyForQuery messages still owed by the backend for requests forwarded. */
  private awaitingReady = 0;
  /** ReadyForQuery messages of the pooler's own SET statements, swallowed. */
  private swallowReady = 0;
  private status: TransactionStatus = 'I';
  /** Extended-protocol messages were forwarded and their Sync has not been: the backend is mid-sequence. */
  private unsynced = false;
  private dirty = false;
  private closeAfterRelease = false;
  /** Transaction pooling only: named prepared statements carried across backends. */
  private readonly router: StatementRouter | null;
  /** The client left session state on its backend (policy 'pin'): it keeps it until it goes. */
  private pinned = false;
  private readonly policy: SessionStatePolicy;

  constructor(private readonly ctx: SessionContext) {
    this.encrypted = ctx.transport !== 'tcp';
    this.policy = ctx.sessionStatePolicy ?? 'pin';
    this.router =
      ctx.poolMode === 'transaction'
        ? new StatementRouter({
            toBackend: (bytes) => this.emit({ type: 'sendToBackend', bytes }),
            toClient: (bytes) => this.send(bytes),
            pass: (type, bytes) => this.deliver(type, bytes),
            readyDropped: () => {
              if (this.awaitingReady > 0) this.awaitingReady--;
            },
          })
        : null;
  }

  /** The client's backend is pinned to it by the session-state policy. */
  get isPinned(): boolean {
    return this.pinned;
  }

  /** Bytes of client messages waiting for a backend. */
  get pendingBytes(): number {
    return this.pendingSize;
  }

  /** Named prepared statements the client has (transaction pooling). */
  get preparedStatementCount(): number {
    return this.router?.statementCount ?? 0;
  }

  /** Feeds one event; returns the actions to carry out, in order. */
  handle(event: SessionEvent): SessionAction[] {
    this.out = [];
    if (this.phase !== 'closed') this.dispatch(event);
    return this.out;
  }

  get hasBackend(): boolean {
    return this.backend !== null;
  }

  /** A request is on the backend right now (what a CancelRequest may interrupt). */
  get busy(): boolean {
    return this.backend !== null && (this.awaitingReady > 0 || this.unsynced);
  }

  private dispatch(e: SessionEvent): void {
    switch (e.type) {
      case 'startupPacket':
        return this.onStartupPacket(e.packet);
      case 'clientMessage':
        return this.onClientMessage(e.message);
      case 'serverParameters': {
        if (this.phase !== 'connecting') return;
        // The client starts with the server's values of every tracked parameter it did not set:
        // a backend another client changed gets them back when this client is given it.
        for (const [name, value] of e.parameters) {
          const tracked = canonicalTrackedName(name);
          if (tracked !== undefined && !this.tracked.has(tracked)) this.setTracked(tracked, value);
        }
        for (const [name, value] of e.parameters) {
          this.send(encodeBackend({ type: 'ParameterStatus', name, value: this.tracked.get(name) ?? value }));
        }
        this.send(encodeBackend({ type: 'BackendKeyData', processId: e.cancelKey.processId, secretKey: e.cancelKey.secretKey }));
        this.send(READY_IDLE);
        this.phase = 'idle';
        if (this.pending.length > 0) this.requestBackend();
        else this.emit(TIMER.clientIdle.on);
        return;
      }
      case 'backendAttached':
        return this.onAttached(e.backend);
      case 'backendMessage':
        return this.onBackendMessage(e.message);
      case 'backendLost':
        if (this.backend === null) return;
        this.backend = null;
        return this.fail(SQLSTATE.CONNECTION_FAILURE, `server connection lost: ${e.reason}`);
      case 'backendUnavailable':
        if (this.phase !== 'waiting' && this.phase !== 'connecting') return;
        this.phase = 'idle'; // the request is answered: nothing to withdraw
        this.send(e.error);
        return this.close();
      case 'protocolError':
        if (this.authFailure !== null) return; // the failure delay runs out first
        return this.fail(SQLSTATE.PROTOCOL_VIOLATION, e.message);
      case 'timeout':
        if (e.timer === 'authFailure') {
          if (this.authFailure !== null) this.fail(this.authFailure.sqlstate, this.authFailure.message);
          return;
        }
        if (e.timer === 'authentication' && (this.phase === 'startup' || this.phase === 'authenticating')) {
          return this.fail(SQLSTATE.QUERY_CANCELED, 'canceling authentication due to timeout');
        }
        if (e.timer === 'clientIdle' && this.phase === 'idle') {
          return this.fail(SQLSTATE.IDLE_SESSION_TIMEOUT, 'terminating connection due to idle-session timeout');
        }
        if (e.timer === 'idleInTransaction' && this.phase === 'attached' && this.awaitingReady === 0 && this.status !== 'I') {
          return this.fail(SQLSTATE.IDLE_IN_TRANSACTION_SESSION_TIMEOUT, 'terminating connection due to idle-in-transaction timeout');
        }
        if (e.timer === 'query' && this.busy) {
          return this.fail(SQLSTATE.QUERY_CANCELED, 'query_timeout: the server did not answer in time; the server connection is closed');
        }
        return;
      case 'clientClosed':
        // A guesser that hangs up early still holds its admission until the failure delay ends.
        if (this.authFailure !== null) return;
        return this.close();
      case 'shutdown':
        if (e.graceful && this.phase === 'attached' && (this.awaitingReady > 0 || this.status !== 'I')) {
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

  private onStartupPacket(p: StartupPacket): void {
    if (this.phase !== 'startup') return this.fail(SQLSTATE.PROTOCOL_VIOLATION, 'unexpected startup packet');
    switch (p.type) {
      case 'SSLRequest': {
        if (this.sslAnswered) return this.fail(SQLSTATE.PROTOCOL_VIOLATION, 'duplicate SSLRequest');
        this.sslAnswered = true;
        if (this.ctx.tlsAvailable && this.ctx.transport === 'tcp') {
          this.send(SSL_YES);
          this.encrypted = true;
          this.emit({ type: 'startTls' });
        } else {
          this.send(SSL_NO);
        }
        return;
      }
      case 'GSSENCRequest':
        this.send(SSL_NO);
        return;
      case 'CancelRequest':
        this.emit({ type: 'cancel', processId: p.processId, secretKey: p.secretKey });
        return this.close();
      case 'StartupMessage':
        return this.onStartupMessage(p);
      default: {
        const never: never = p;
        throw new Error(`unhandled startup packet ${JSON.stringify(never)}`);
      }
    }
  }

  private onStartupMessage(m: StartupMessage): void {
    const minor = m.protocolVersion & 0xffff;
    const options = Object.keys(m.parameters).filter((k) => k.startsWith('_pq_.'));
    this.protocolMinor = minor >= 2 ? 2 : 0;
    if ((minor !== 0 && minor !== 2) || options.length > 0) {
      // Newest minor we speak that is not above what the client asked for.
      this.send(encodeBackend({ type: 'NegotiateProtocolVersion', newestProtocolVersion: (3 << 16) | this.protocolMinor, unrecognizedOptions: options }));
    }
    const check = checkStartupParameters(m.parameters, this.ctx.ignoreStartupParameters);
    if (!check.ok) return this.fail(check.sqlstate, check.message);
    this.database = check.database;
    this.user = check.user;
    for (const [k, v] of check.tracked) this.setTracked(k, v);
    const refused = this.ctx.admit(check.database, check.user);
    if (refused !== undefined) return this.fail(refused.sqlstate, refused.message);
    this.phase = 'authenticating';
    this.auth = new ClientAuthenticator({
      userName: check.user,
      user: this.ctx.lookupUser(check.user),
      encrypted: this.encrypted,
      allowInsecurePasswordAuth: this.ctx.allowInsecurePasswordAuth,
    });
    this.onAuthStep(this.auth.start());
  }

  private onAuthStep(step: ReturnType<ClientAuthenticator['start']>): void {
    switch (step.kind) {
      case 'continue':
        this.authExpect = step.expect;
        this.send(step.bytes);
        return;
      case 'ok':
        this.auth = null;
        this.send(step.bytes);
        this.phase = 'connecting';
        this.emit(TIMER.authentication.off);
        this.emit({ type: 'authenticated', database: this.database, user: this.user });
        return;
      case 'fail':
        if (step.sqlstate === SQLSTATE.INVALID_PASSWORD && (this.ctx.authFailureDelay ?? false)) {
          // Every failed login costs the client the auth-failure delay (Postgres's auth_delay).
          this.auth = null;
          this.authFailure = { sqlstate: step.sqlstate, message: step.message };
          this.emit(TIMER.authentication.off);
          this.emit({ type: 'timer', timer: 'authFailure', armed: true });
          return;
        }
        return this.fail(step.sqlstate, step.message);
      default: {
        const never: never = step;
        throw new Error(`unhandled auth step ${JSON.stringify(never)}`);
      }
    }
  }

  private onClientMessage(m: RawMessage): void {
    const type = m.type;
    if (this.phase === 'authenticating') {
      if (this.authFailure !== null) return;
      if (type !== T_AUTH || this.auth === null || this.authExpect === undefined) {
        return this.fail(SQLSTATE.PROTOCOL_VIOLATION, 'expected an authentication response');
      }
      return this.onAuthStep(this.auth.respond(decodeFrontendMessage(m.bytes, this.authExpect)));
    }
    if (type === T_AUTH) return this.fail(SQLSTATE.PROTOCOL_VIOLATION, 'unexpected authentication response');
    if (type === T_TERMINATE) return this.close();
    switch (this.phase) {
      case 'attached':
        return this.forward(type, m.bytes);
      case 'idle':
        this.hold(m.bytes);
        this.emit(TIMER.clientIdle.off);
        return this.requestBackend();
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

  private hold(bytes: Buffer): void {
    this.pending.push(bytes);
    this.pendingSize += bytes.length;
  }

  private forward(type: number, message: Buffer): void {
    let bytes = message;
    if (type === T_QUERY || type === T_SYNC || type === T_FUNCTION_CALL) {
      if (this.awaitingReady === 0) {
        if (this.status !== 'I') this.emit(TIMER.idleInTransaction.off);
        this.emit(TIMER.query.on);
      }
      this.awaitingReady++;
      if (type === T_SYNC) this.unsynced = false;
    } else if (EXTENDED.has(type)) {
      this.unsynced = true;
    }
    // Examined once (it scans the text): with the router the policy decides, without it only `dirty` matters.
    if (type === T_QUERY || type === T_PARSE) {
      if (this.router !== null) {
        if (mayChangeSessionState(type, bytes)) bytes = this.onSessionState(type, bytes);
      } else if (!this.dirty && mayChangeSessionState(type, bytes)) {
        this.dirty = true;
      }
    }
    if (this.router !== null) this.router.client(type, bytes, this.searchPath);
    else this.emit({ type: 'sendToBackend', bytes });
  }

  private setTracked(name: string, value: string): void {
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

  /** Transaction pooling: the client runs something that leaves session state; apply the policy. */
  private onSessionState(type: number, bytes: Buffer): Buffer {
    switch (this.policy) {
      case 'pin':
        this.pinned = true;
        this.dirty = true;
        return bytes;
      case 'reset':
        this.dirty = true;
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
    this.phase = 'attached';
    this.awaitingReady = 0;
    this.unsynced = false;
    this.status = 'I';
    this.dirty = this.ctx.poolMode === 'session' || this.pinned;
    this.router?.attach(statementsOf(b, this.ctx.preparedStatementCacheSize ?? 1000));
    this.applyTracked(b);
    // The two pending arrays swap roles: forwarding queues nothing (attached), but stays correct if it did.
    const pending = this.pending;
    this.pending = this.spare;
    this.pendingSize = 0;
    for (let i = 0; i < pending.length; i++) {
      const bytes = pending[i]!;
      this.forward(bytes[0]!, bytes);
    }
    pending.length = 0;
    this.spare = pending;
  }

  /** SETs the client's tracked parameters whose value on the backend differs (answers swallowed). */
  private applyTracked(b: AttachedBackend): void {
    const sig = this.signature();
    const memo = b.trackedMatch;
    if (memo !== undefined && memo.signature === sig && memo.version === b.parametersVersion) return;
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
      return;
    }
    this.swallowReady = 1;
    this.emit({ type: 'sendToBackend', bytes: encodeQuery(setStatements(changes)) });
  }

  private onBackendMessage(m: RawMessage): void {
    if (this.phase !== 'attached') return;
    const type = m.type;
    if (this.swallowReady > 0) {
      // Answers to the pooler's own SET statements: the client never asked for them.
      if (type === B_READY) this.swallowReady--;
      return;
    }
    if (this.router !== null) this.router.backend(type, m.bytes);
    else this.deliver(type, m.bytes);
  }

  /** A backend message that answers the client. */
  private deliver(type: number, bytes: Buffer): void {
    if (type === B_PARAMETER_STATUS) {
      const p = decodeBackendMessage(bytes);
      if (p.type === 'ParameterStatus') {
        const name = canonicalTrackedName(p.name);
        if (name !== undefined) this.setTracked(name, p.value);
      }
    } else if (type === B_READY) {
      const status = readyForQueryStatus(bytes);
      if (status === undefined) return this.fail(SQLSTATE.PROTOCOL_VIOLATION, 'malformed ReadyForQuery from server');
      this.status = status;
      if (this.awaitingReady > 0) {
        this.awaitingReady--;
        this.queriesAnswered++;
      }
      this.send(bytes);
      if (this.awaitingReady === 0 && !this.unsynced) {
        this.emit(TIMER.query.off);
        if (status === 'I' && ((this.ctx.poolMode === 'transaction' && !this.pinned) || this.closeAfterRelease)) this.release();
        else if (status !== 'I') this.emit(TIMER.idleInTransaction.on);
        // Graceful shutdown: the transaction has ended (and the backend is back): now close.
        if (this.closeAfterRelease && status === 'I') this.fail(SQLSTATE.ADMIN_SHUTDOWN, 'terminating connection due to administrator command');
      }
      return;
    }
    this.send(bytes);
  }

  private release(): void {
    if (this.backend === null) return;
    const busy = this.awaitingReady > 0 || this.swallowReady > 0 || this.unsynced || (this.router?.pending ?? 0) > 0;
    const facts: ReleaseFacts = !busy && !this.dirty && this.status === 'I' ? CLEAN_RELEASE : { status: this.status, busy, dirty: this.dirty };
    this.backend = null;
    this.swallowReady = 0;
    // A dirty backend is reset (DISCARD ALL) before reuse: its prepared statements go with it.
    this.router?.detach(facts.dirty || facts.busy);
    this.emit({ type: 'releaseBackend', facts });
    if (this.phase === 'attached') {
      this.phase = 'idle';
      this.emit(TIMER.clientIdle.on);
    }
  }

  /** ErrorResponse FATAL, then close. */
  private fail(sqlstate: string, message: string): void {
    if (this.phase === 'closed') return;
    this.send(errorResponse('FATAL', sqlstate, message));
    this.close();
  }

  private close(): void {
    if (this.phase === 'closed') return;
    if (this.phase === 'waiting') this.emit({ type: 'withdrawRequest' });
    this.release();
    this.phase = 'closed';
    this.pending = [];
    this.pendingSize = 0;
    this.emit(TIMER.clientIdle.off);
    this.emit(TIMER.idleInTransaction.off);
    this.emit(TIMER.query.off);
    if (this.authFailure !== null) this.emit({ type: 'timer', timer: 'authFailure', armed: false });
    this.emit({ type: 'close' });
  }

  private send(bytes: Buffer): void {
    this.emit({ type: 'sendToClient', bytes });
  }

  private emit(a: SessionAction): void {
    this.out.push(a);
  }
}

const encodeQuery = (query: string): Buffer => encodeFrontend({ type: 'Query', query });
