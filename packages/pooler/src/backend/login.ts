// Logging in to the real PostgreSQL server as a state machine without I/O: StartupMessage, then
// whatever authentication the server asks for (SCRAM-SHA-256, md5, cleartext password, trust),
// ParameterStatus and BackendKeyData until the first ReadyForQuery, then, for a pool that cares
// which kind of server it reached and a server older than 14 (which does not report it), one
// query for that. Messages in, actions out; the slow step of SCRAM (PBKDF2) is an action the
// driver performs and answers with 'derived'.
import { encodeFrontend, encodeStartupPacket, errorResponse, PROTOCOL_3_0, SQLSTATE } from '@quicpool/wire';
import type { BackendMessage, NoticeFields } from '@quicpool/wire';
import { md5Response, md5Secret } from '../auth/md5.js';
import { SCRAM_SHA_256, ScramClient } from '../auth/scram.js';
import type { ScramDerivation, ScramKeys } from '../auth/scram.js';
import type { EncodedError } from '../runtime/encoded-error.js';
import { roleFromParameters } from './server-role.js';
import type { ServerRole } from './server-role.js';

/**
 * Login failed: `fields` are the server's ErrorResponse fields when it sent one; `code` says why
 * when it did not (the transport's errno, 'ETIMEDOUT' for the login deadline, 'NO_TARGET' when
 * no host qualified for target_session_attrs).
 */
export class BackendLoginError extends Error {
  override readonly name = 'BackendLoginError';
  constructor(
    message: string,
    readonly fields: NoticeFields | undefined,
    readonly code?: string,
  ) {
    super(message);
  }

  /** The ErrorResponse a waiting client gets: the server's own (its SQLSTATE kept), else 08001. */
  toEncodedError(): EncodedError {
    const f = this.fields;
    if (f === undefined) return fatal(SQLSTATE.SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION, this.message);
    const { S: _s, V: _v, C: code, M: message, ...extra } = f;
    return fatal(code ?? SQLSTATE.CONNECTION_FAILURE, message ?? this.message, pick(extra, 'DH'));
  }
}

/** A FATAL ErrorResponse with its SQLSTATE and message kept beside the bytes. */
export function fatal(sqlstate: string, message: string, extra: NoticeFields = {}): EncodedError {
  return { bytes: errorResponse('FATAL', sqlstate, message, extra), sqlstate, message };
}

function pick(fields: NoticeFields, codes: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const c of codes) if (fields[c] !== undefined) out[c] = fields[c];
  return out;
}

export interface LoginResult {
  readonly parameters: Map<string, string>;
  readonly processId: number;
  readonly secretKey: Buffer;
  /** What the server is (standby, read-only); undefined when nobody asked and it did not report. */
  readonly role: ServerRole | undefined;
}

export type LoginEvent =
  | { readonly type: 'message'; readonly message: BackendMessage }
  /** The salted password the 'derive' action asked for. */
  | { readonly type: 'derived'; readonly salted: Buffer };

export type LoginAction =
  | { readonly type: 'send'; readonly bytes: Buffer }
  /** Derive SCRAM's salted password (PBKDF2) and answer with a 'derived' event. */
  | { readonly type: 'derive'; readonly derivation: ScramDerivation }
  | { readonly type: 'ready'; readonly result: LoginResult }
  | { readonly type: 'failed'; readonly error: BackendLoginError };

type Phase = 'new' | 'authenticating' | 'deriving' | 'started' | 'checking' | 'done';

/** Asked of a server older than 14 when the pool needs its role (libpq asks the same). */
const ROLE_QUERY = "SELECT pg_catalog.pg_is_in_recovery()::pg_catalog.text, pg_catalog.current_setting('transaction_read_only')";

export class ServerLogin {
  private phase: Phase = 'new';
  private scram: ScramClient | null = null;
  private readonly parameters = new Map<string, string>();
  private processId = 0;
  private secretKey = Buffer.alloc(0);
  private role: ServerRole | undefined;

  constructor(
    private readonly login: {
      readonly database: string;
      readonly user: string;
      readonly password: string | undefined;
      /** Without a password: SCRAM keys a client's proof revealed (auth_query users). */
      readonly scramKeys?: ScramKeys | undefined;
      /** The pool needs to know the server's role (target_session_attrs other than 'any'). */
      readonly needsRole?: boolean;
    },
  ) {}

  get done(): boolean {
    return this.phase === 'done';
  }

  /** The StartupMessage. */
  start(): LoginAction[] {
    if (this.phase !== 'new') return [];
    this.phase = 'authenticating';
    const parameters = { user: this.login.user, database: this.login.database };
    return [{ type: 'send', bytes: encodeStartupPacket({ type: 'StartupMessage', protocolVersion: PROTOCOL_3_0, parameters }) }];
  }

  handle(e: LoginEvent): LoginAction[] {
    if (this.phase === 'done' || this.phase === 'new') return [];
    try {
      return e.type === 'derived' ? this.onDerived(e.salted) : this.onMessage(e.message);
    } catch (err) {
      return this.fail(err instanceof BackendLoginError ? err : new BackendLoginError(`server login failed: ${err instanceof Error ? err.message : String(err)}`, undefined));
    }
  }

  private onMessage(m: BackendMessage): LoginAction[] {
    if (this.phase === 'deriving' && m.type !== 'ErrorResponse' && m.type !== 'NoticeResponse') {
      throw new BackendLoginError(`unexpected ${m.type} while answering SCRAM`, undefined);
    }
    if (this.phase === 'checking') return this.onRoleAnswer(m);
    switch (m.type) {
      case 'AuthenticationOk':
        this.phase = 'started';
        return [];
      case 'NoticeResponse':
      case 'NegotiateProtocolVersion':
        return [];
      case 'AuthenticationCleartextPassword':
        return [{ type: 'send', bytes: encodeFrontend({ type: 'PasswordMessage', password: this.password() }) }];
      case 'AuthenticationMD5Password':
        return [{ type: 'send', bytes: encodeFrontend({ type: 'PasswordMessage', password: md5Response(md5Secret(this.login.user, this.password()), m.salt) }) }];
      case 'AuthenticationSASL': {
        if (!m.mechanisms.includes(SCRAM_SHA_256)) throw new BackendLoginError(`server offers no supported SASL mechanism (${m.mechanisms.join(', ')})`, undefined);
        const keys = this.login.password === undefined ? this.login.scramKeys : undefined;
        this.scram = new ScramClient(keys ?? this.password());
        return [{ type: 'send', bytes: encodeFrontend({ type: 'SASLInitialResponse', mechanism: SCRAM_SHA_256, data: this.scram.clientFirst() }) }];
      }
      case 'AuthenticationSASLContinue': {
        if (this.scram === null) throw new BackendLoginError('unexpected AuthenticationSASLContinue', undefined);
        // SCRAM keys instead of a password: nothing slow to derive.
        if (this.scram.hasKeys) return [{ type: 'send', bytes: encodeFrontend({ type: 'SASLResponse', data: this.scram.clientFinalFromKeys(m.data) }) }];
        this.phase = 'deriving';
        return [{ type: 'derive', derivation: this.scram.serverFirst(m.data) }];
      }
      case 'AuthenticationSASLFinal':
        if (this.scram === null) throw new BackendLoginError('unexpected AuthenticationSASLFinal', undefined);
        this.scram.verifyServerFinal(m.data);
        return [];
      case 'ParameterStatus':
        this.parameters.set(m.name, m.value);
        return [];
      case 'BackendKeyData':
        this.processId = m.processId;
        this.secretKey = Buffer.from(m.secretKey);
        return [];
      case 'ErrorResponse':
        // Class 28 (invalid authorization): the pooler's own credentials, not the client's doing.
        if (m.fields['C']?.startsWith('28') === true) throw this.poolerLoginFailed(m.fields['M'] ?? 'authentication failed', m.fields['C']);
        throw new BackendLoginError(`server refused login: ${m.fields['M'] ?? 'unknown error'}`, m.fields);
      case 'ReadyForQuery':
        if (this.phase !== 'started') throw new BackendLoginError('ReadyForQuery before AuthenticationOk', undefined);
        this.role = roleFromParameters(this.parameters);
        if (this.role === undefined && this.login.needsRole === true) {
          this.phase = 'checking';
          return [{ type: 'send', bytes: encodeFrontend({ type: 'Query', query: ROLE_QUERY }) }];
        }
        return this.ready();
      default:
        throw new BackendLoginError(`unexpected ${m.type} during server login`, undefined);
    }
  }

  /** The answer to ROLE_QUERY: one row (in recovery, transaction_read_only), then ReadyForQuery. */
  private onRoleAnswer(m: BackendMessage): LoginAction[] {
    switch (m.type) {
      case 'DataRow': {
        const [standby, readOnly] = m.values.map((v) => v?.toString('utf8'));
        this.role = { standby: standby === 'true', readOnly: standby === 'true' || readOnly === 'on' };
        return [];
      }
      case 'ReadyForQuery':
        if (this.role === undefined) throw new BackendLoginError('the server did not say whether it is a standby', undefined);
        return this.ready();
      case 'ErrorResponse':
        throw new BackendLoginError(`server refused the role query: ${m.fields['M'] ?? 'unknown error'}`, m.fields);
      default:
        // RowDescription, CommandComplete, notices, ParameterStatus.
        if (m.type === 'ParameterStatus') this.parameters.set(m.name, m.value);
        return [];
    }
  }

  private ready(): LoginAction[] {
    this.phase = 'done';
    return [{ type: 'ready', result: { parameters: this.parameters, processId: this.processId, secretKey: this.secretKey, role: this.role } }];
  }

  private onDerived(salted: Buffer): LoginAction[] {
    if (this.phase !== 'deriving' || this.scram === null) return [];
    this.phase = 'authenticating';
    return [{ type: 'send', bytes: encodeFrontend({ type: 'SASLResponse', data: this.scram.clientFinal(salted) }) }];
  }

  private password(): string {
    const p = this.login.password;
    if (p === undefined) throw this.poolerLoginFailed('the server asks for a password and the pooler has none for this user', null);
    return p;
  }

  /**
   * The server refused the pooler's own login (wrong or missing server password, pg_hba.conf): the
   * client, already authenticated by the pooler, gets 08004 saying so (never the server's 28P01,
   * which it would take for its own wrong password); `serverCode` is what the server said, for the log.
   */
  private poolerLoginFailed(reason: string, serverCode: string | null): BackendLoginError {
    const message = `pooler could not log in to the server as "${this.login.user}": ${reason}`;
    return new BackendLoginError(message, {
      S: 'FATAL',
      C: SQLSTATE.SQLSERVER_REJECTED_ESTABLISHMENT_OF_SQLCONNECTION,
      M: message,
      D: serverCode === null ? 'The pooler authenticated the client; its own login to PostgreSQL failed.' : `The server answered SQLSTATE ${serverCode} to the pooler's login; the pooler authenticated the client.`,
      H: 'The pooler\'s server credentials for this user are wrong or missing (users.NAME.server_password / password, or auth_query); see the pooler\'s log.',
    });
  }

  private fail(error: BackendLoginError): LoginAction[] {
    this.phase = 'done';
    return [{ type: 'failed', error }];
  }
}
