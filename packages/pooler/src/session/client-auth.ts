// Authenticating one client against the pooler's own user list, as a small state machine: it is
// handed each 'p' message decoded as the kind it asked for, and answers with bytes to send.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { encodeBackend, SQLSTATE } from '@quicpool/wire';
import type { AuthenticationResponseKind, TypedFrontendMessage, SqlState } from '@quicpool/wire';
import type { PeerCertificate } from '@quicpool/transport';
import type { ResolvedUser } from '../config/pooler-config.js';
import { verifyMd5 } from '../auth/md5.js';
import { DEFAULT_SCRAM_ITERATIONS, SCRAM_SHA_256, ScramServer } from '../auth/scram.js';
import type { ScramKeys, ScramSecret } from '../auth/scram.js';

export type AuthStep =
  /** Send `bytes`, then decode the client's next 'p' message as `expect`. */
  | { readonly kind: 'continue'; readonly bytes: Buffer; readonly expect: AuthenticationResponseKind }
  /**
   * Authenticated: send `bytes` (AuthenticationOk, preceded by SASLFinal for SCRAM). After SCRAM,
   * `scramKeys`: the ClientKey the proof revealed and the secret's ServerKey, with which the
   * pooler can log in to a server holding the same secret (no server password needed).
   */
  | { readonly kind: 'ok'; readonly bytes: Buffer; readonly scramKeys?: ScramKeys }
  | { readonly kind: 'fail'; readonly sqlstate: SqlState; readonly message: string };

export interface ClientAuthContext {
  readonly userName: string;
  /** undefined when the user is not configured: SCRAM still runs (with a mock secret), then fails. */
  readonly user: ResolvedUser | undefined;
  /** Transport already encrypts (TLS, QUIC, or in-process memory). */
  readonly encrypted: boolean;
  readonly allowInsecurePasswordAuth: boolean;
  /** The client certificate the session's connection presented and that verified, else null. */
  readonly peerCertificate: PeerCertificate | null;
}

const AUTH_OK = encodeBackend({ type: 'AuthenticationOk' });

// A mock secret for unknown users, so a prober cannot tell "no such user" from "wrong password".
// As Postgres's scram_mock_salt: the salt is derived from the user name and a per-process nonce,
// so one unknown name always gets the same salt and two names never share one (a fixed mock salt
// would give every unknown user the same salt, which a prober can compare). The keys are random:
// no proof can match them (and the mock path fails regardless).
const mockNonce = randomBytes(32);
const mockKeys = { storedKey: randomBytes(32), serverKey: randomBytes(32) };
function mockSecret(userName: string): ScramSecret {
  const salt = createHmac('sha256', mockNonce).update(userName).digest().subarray(0, 16);
  return { iterations: DEFAULT_SCRAM_ITERATIONS, salt, ...mockKeys };
}

/** The certificate is one of those mapped to the user: by subject CN or by SHA-256 fingerprint. */
function certificateMapped(cert: PeerCertificate | null, user: ResolvedUser): boolean {
  if (cert === null) return false;
  if (cert.commonName !== null && user.certCommonNames.has(cert.commonName)) return true;
  return user.certFingerprints.has(cert.fingerprint256);
}

export class ClientAuthenticator {
  private scram: ScramServer | null = null;
  private md5Salt: Buffer | null = null;
  private method: 'scram-sha-256' | 'md5' | 'password' | 'trust' | 'cert' | 'mock' = 'mock';

  constructor(private readonly ctx: ClientAuthContext) {}

  start(): AuthStep {
    const user = this.ctx.user;
    this.method = user === undefined ? 'mock' : user.auth;
    switch (this.method) {
      case 'trust':
        return { kind: 'ok', bytes: AUTH_OK };
      case 'cert':
        return user !== undefined && certificateMapped(this.ctx.peerCertificate, user) ? { kind: 'ok', bytes: AUTH_OK } : {
          kind: 'fail',
          sqlstate: SQLSTATE.INVALID_AUTHORIZATION_SPECIFICATION,
          message: this.ctx.peerCertificate === null
            ? `certificate authentication failed for user "${this.ctx.userName}": the connection presented no verified client certificate`
            : `certificate authentication failed for user "${this.ctx.userName}": certificate "${this.ctx.peerCertificate.commonName ?? this.ctx.peerCertificate.fingerprint256}" is not mapped to this user`,
        };
      case 'mock':
      case 'scram-sha-256':
        this.scram = new ScramServer(user?.scram ?? mockSecret(this.ctx.userName));
        return {
          kind: 'continue',
          bytes: encodeBackend({ type: 'AuthenticationSASL', mechanisms: [SCRAM_SHA_256] }),
          expect: 'SASLInitialResponse',
        };
      case 'md5':
      case 'password': {
        if (!this.ctx.encrypted && !this.ctx.allowInsecurePasswordAuth) {
          return {
            kind: 'fail',
            sqlstate: SQLSTATE.INVALID_AUTHORIZATION_SPECIFICATION,
            message: `${this.method} authentication over unencrypted TCP is not allowed for user "${this.ctx.userName}": use TLS or QUIC, or SCRAM`,
          };
        }
        if (this.method === 'password') {
          return { kind: 'continue', bytes: encodeBackend({ type: 'AuthenticationCleartextPassword' }), expect: 'PasswordMessage' };
        }
        this.md5Salt = randomBytes(4);
        return { kind: 'continue', bytes: encodeBackend({ type: 'AuthenticationMD5Password', salt: this.md5Salt }), expect: 'PasswordMessage' };
      }
      default: {
        const never: never = this.method;
        throw new Error(`unhandled auth method ${String(never)}`);
      }
    }
  }

  /** The client's answer, decoded as the kind the last step asked for. */
  respond(m: TypedFrontendMessage): AuthStep {
    const user = this.ctx.user;
    switch (m.type) {
      case 'SASLInitialResponse': {
        if (this.scram === null) return this.failed();
        const step = this.scram.clientFirst(m.mechanism, m.data);
        if (step.kind !== 'continue') return this.failed();
        return {
          kind: 'continue',
          bytes: encodeBackend({ type: 'AuthenticationSASLContinue', data: Buffer.from(step.serverFirst) }),
          expect: 'SASLResponse',
        };
      }
      case 'SASLResponse': {
        if (this.scram === null) return this.failed();
        const step = this.scram.clientFinal(m.data);
        if (step.kind !== 'final' || this.method === 'mock' || user?.scram === undefined) return this.failed();
        const final = encodeBackend({ type: 'AuthenticationSASLFinal', data: Buffer.from(step.serverFinal) });
        return { kind: 'ok', bytes: Buffer.concat([final, AUTH_OK]), scramKeys: { clientKey: step.clientKey, serverKey: user.scram.serverKey } };
      }
      case 'PasswordMessage': {
        if (user === undefined) return this.failed();
        if (this.method === 'md5' && this.md5Salt !== null && user.md5 !== undefined) {
          return verifyMd5(user.md5, this.md5Salt, m.password) ? { kind: 'ok', bytes: AUTH_OK } : this.failed();
        }
        if (this.method === 'password' && user.password !== undefined) {
          const a = Buffer.from(m.password);
          const b = Buffer.from(user.password);
          // The length may leak, the content does not.
          return a.length === b.length && timingSafeEqual(a, b) ? { kind: 'ok', bytes: AUTH_OK } : this.failed();
        }
        return this.failed();
      }
      default:
        return this.failed();
    }
  }

  private failed(): AuthStep {
    return {
      kind: 'fail',
      sqlstate: SQLSTATE.INVALID_PASSWORD,
      message: `password authentication failed for user "${this.ctx.userName}"`,
    };
  }
}
