// The first part of a client session: the startup packets (SSLRequest, GSSENCRequest,
// CancelRequest, StartupMessage with protocol negotiation), admission, and authentication against
// the pooler's user list, including the auth-failure delay, and what a login that did not
// complete reports (loginFailure). No I/O: it tells its owner what to send and what happened; the
// owner (ClientSession) runs the rest of the session.
import { decodeFrontendMessage, encodeBackend, MessageType, SQLSTATE } from '@quicpool/wire';
import type { AuthenticationResponseKind, RawMessage, SqlState, StartupMessage, StartupPacket } from '@quicpool/wire';
import { AUTH_FAILURE_OFF, AUTH_FAILURE_ON, AUTHENTICATION_OFF } from './actions.js';
import { ClientAuthenticator } from './client-auth.js';
import { checkStartupParameters } from './startup-parameters.js';
import type { ScramKeys } from '../auth/scram.js';
import type { Refusal, SessionAction, SessionContext } from './types.js';

/** What the startup piece tells the session it belongs to. */
export interface StartupOwner {
  send(bytes: Buffer): void;
  emit(a: SessionAction): void;
  /** FATAL error to the client, then close. */
  fail(sqlstate: SqlState, message: string): void;
  close(): void;
  /** The client is authenticated (its database and user, the tracked parameters it asked for, SCRAM's keys). */
  authenticated(database: string, user: string, tracked: ReadonlyMap<string, string>, scramKeys: ScramKeys | undefined): void;
}

const SSL_NO = Buffer.from('N');
const SSL_YES = Buffer.from('S');

export class StartupAuth {
  database = '';
  user = '';
  /** Minor protocol version agreed with the client (0 or 2). */
  protocolMinor = 0;
  /** The client passed admission (it holds a slot of the pool's client limit). */
  admitted = false;
  private sslAnswered = false;
  private encrypted: boolean;
  private auth: ClientAuthenticator | null = null;
  private authExpect: AuthenticationResponseKind | undefined;
  /** A failed login held back for the auth-failure delay (the client waits, its input is discarded). */
  private heldFailure: { readonly sqlstate: SqlState; readonly message: string } | null = null;
  private authenticatedOnce = false;
  /** The login completed: the client got its greeting (set by the session). */
  loggedIn = false;
  /** The FATAL error the session sent last (what a failed login reports; set by the session). */
  lastError: { readonly sqlstate: string; readonly message: string } | null = null;

  constructor(
    private readonly ctx: SessionContext,
    private readonly owner: StartupOwner,
  ) {
    this.encrypted = ctx.transport !== 'tcp' && ctx.transport !== 'unix';
  }

  /** A failed login is being held back (see `failureDelayOver`). */
  get holdingFailure(): boolean {
    return this.heldFailure !== null;
  }

  /** Authentication is under way (a 'p' message is expected). */
  get authenticating(): boolean {
    return this.auth !== null;
  }

  /** The auth-failure delay ran out: the held failure goes to the client now. */
  failureDelayOver(): void {
    const f = this.heldFailure;
    if (f === null) return;
    this.heldFailure = null;
    this.owner.fail(f.sqlstate, f.message);
  }

  /** Admitted, not logged in yet: a session that ends now is a failed login (see loginFailure). */
  get loginPending(): boolean {
    return this.admitted && !this.loggedIn;
  }

  /** An admitted client ends before its login completed: where and why. */
  loginFailure(): SessionAction {
    const stage = this.authenticatedOnce ? 'server login' : 'authentication';
    const e = this.lastError;
    let reason = e?.message ?? `the client closed the connection during ${stage}`;
    // The client only learns "password authentication failed"; the operator also learns why.
    if (stage === 'authentication' && this.ctx.lookupUser(this.user) === undefined) reason += ` (${this.ctx.describeUnknownUser?.(this.user) ?? 'no such user in the config'})`;
    return { type: 'loginFailed', stage, sqlstate: e?.sqlstate ?? null, reason };
  }

  /** The session closes: a held failure's timer goes too. */
  closing(): void {
    if (this.heldFailure !== null) this.owner.emit(AUTH_FAILURE_OFF);
  }

  startupPacket(p: StartupPacket): void {
    switch (p.type) {
      case 'SSLRequest': {
        if (this.sslAnswered) return this.owner.fail(SQLSTATE.PROTOCOL_VIOLATION, 'duplicate SSLRequest');
        this.sslAnswered = true;
        if (this.ctx.tlsAvailable && this.ctx.transport === 'tcp') {
          this.owner.send(SSL_YES);
          this.encrypted = true;
          this.owner.emit({ type: 'startTls' });
        } else {
          this.owner.send(SSL_NO);
        }
        return;
      }
      case 'GSSENCRequest':
        this.owner.send(SSL_NO);
        return;
      case 'CancelRequest':
        this.owner.emit({ type: 'cancel', processId: p.processId, secretKey: p.secretKey });
        return this.owner.close();
      case 'StartupMessage':
        return this.startupMessage(p);
      default: {
        const never: never = p;
        throw new Error(`unhandled startup packet ${JSON.stringify(never)}`);
      }
    }
  }

  private startupMessage(m: StartupMessage): void {
    const minor = m.protocolVersion & 0xffff;
    const options = Object.keys(m.parameters).filter((k) => k.startsWith('_pq_.'));
    this.protocolMinor = minor >= 2 ? 2 : 0;
    if ((minor !== 0 && minor !== 2) || options.length > 0) {
      // Newest minor we speak that is not above what the client asked for.
      this.owner.send(encodeBackend({ type: 'NegotiateProtocolVersion', newestProtocolVersion: (3 << 16) | this.protocolMinor, unrecognizedOptions: options }));
    }
    const check = checkStartupParameters(m.parameters, this.ctx.ignoreStartupParameters, this.ctx.ignoreStartupParametersKey);
    if (!check.ok) return this.owner.fail(check.sqlstate, check.message);
    this.database = check.database;
    this.user = check.user;
    const refused = this.ctx.admit(check.database, check.user);
    if (refused !== undefined && refused.afterAuthentication !== true) return this.owner.fail(refused.sqlstate, refused.message);
    this.refusedAfterAuthentication = refused ?? null;
    this.admitted = true;
    this.tracked = check.tracked;
    this.auth = new ClientAuthenticator({
      userName: check.user,
      user: this.ctx.lookupUser(check.user),
      encrypted: this.encrypted,
      allowInsecurePasswordAuth: this.ctx.allowInsecurePasswordAuth,
      peerCertificate: this.ctx.peerCertificate(),
    });
    this.step(this.auth.start());
  }

  private tracked: ReadonlyMap<string, string> = new Map();
  /** Admitted to authenticate only: refused once authenticated (see Refusal.afterAuthentication). */
  private refusedAfterAuthentication: Refusal | null = null;

  /** A typed message during authentication. */
  authResponse(m: RawMessage): void {
    if (this.heldFailure !== null) return; // the failure delay runs out first; input is discarded
    if (m.type !== MessageType.AuthenticationResponse || this.auth === null || this.authExpect === undefined) {
      return this.owner.fail(SQLSTATE.PROTOCOL_VIOLATION, 'expected an authentication response');
    }
    this.step(this.auth.respond(decodeFrontendMessage(m.bytes, this.authExpect)));
  }

  /** Every failed login costs the client the auth-failure delay (Postgres's auth_delay), when there is one. */
  private holdFailure(sqlstate: SqlState, message: string): void {
    if (!(this.ctx.authFailureDelay ?? false)) return this.owner.fail(sqlstate, message);
    this.auth = null;
    this.heldFailure = { sqlstate, message };
    this.owner.emit(AUTHENTICATION_OFF);
    this.owner.emit(AUTH_FAILURE_ON);
  }

  private step(step: ReturnType<ClientAuthenticator['start']>): void {
    switch (step.kind) {
      case 'continue':
        this.authExpect = step.expect;
        this.owner.send(step.bytes);
        return;
      case 'ok': {
        this.auth = null;
        const refused = this.refusedAfterAuthentication;
        if (refused !== null) return this.holdFailure(refused.sqlstate, refused.message);
        this.owner.send(step.bytes);
        this.owner.emit(AUTHENTICATION_OFF);
        this.authenticatedOnce = true;
        this.owner.authenticated(this.database, this.user, this.tracked, step.scramKeys);
        return;
      }
      case 'fail':
        if (step.sqlstate === SQLSTATE.INVALID_PASSWORD) return this.holdFailure(step.sqlstate, step.message);
        return this.owner.fail(step.sqlstate, step.message);
      default: {
        const never: never = step;
        throw new Error(`unhandled auth step ${JSON.stringify(never)}`);
      }
    }
  }
}
