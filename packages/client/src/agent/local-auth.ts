// The agent's local checks of its local clients, for when the pooler does not authenticate each
// session itself (it accepts the agent's certificate instead): "peer" (unix socket: the OS user at
// the other end must be the database user, as Postgres' peer authentication) and "password" (a
// local list, checked with SCRAM-SHA-256 on the loopback hop, so the WAN carries no SCRAM exchange
// per session). No I/O here except reading /etc/passwd for a uid's name.
import { readFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { userInfo } from 'node:os';
import {
  decodeAuthenticationResponse,
  encodeBackend,
  makeScramSecret,
  MAX_AUTH_MESSAGE_SIZE,
  parseScramSecret,
  ProtocolError,
  SCRAM_SHA_256,
  ScramError,
  scramServerFirst,
  SQLSTATE,
  verifyScramClientFinal,
} from '@quicpool/wire';
import type { ScramSecret, ScramServerState } from '@quicpool/wire';

/**
 * "pooler": nothing local, the pooler authenticates the session (SCRAM relayed end to end, the
 * default); "peer": the unix socket's peer process must run as the OS user named like the database
 * user; "password": the local password list, by SCRAM on the local hop.
 */
export type LocalCheck = 'pooler' | 'peer' | 'password';

export interface LocalChecksOptions {
  /** Sessions on the unix socket. Default 'pooler'. */
  readonly socket?: LocalCheck;
  /** Sessions on the TCP port ('peer' is not possible there). Default 'pooler'. */
  readonly tcp?: Exclude<LocalCheck, 'peer'>;
  /** user -> plaintext password or a Postgres SCRAM-SHA-256 secret (for 'password'). */
  readonly passwords?: ReadonlyMap<string, string> | Readonly<Record<string, string>>;
}

const SASL_RESPONSE = 0x70; // 'p'

export type ScramStep =
  | { readonly kind: 'more' }
  | { readonly kind: 'send'; readonly bytes: Buffer }
  /** Verified: send `bytes` (AuthenticationSASLFinal); `rest` arrived after the last SASL message. */
  | { readonly kind: 'ok'; readonly bytes: Buffer; readonly rest: Buffer }
  | { readonly kind: 'fail'; readonly sqlstate: string; readonly message: string };

/** One local SCRAM-SHA-256 exchange, server side: bytes from the local client in, steps out. */
export class LocalScram {
  private buf: Buffer = Buffer.alloc(0);
  private state: ScramServerState | null = null;

  constructor(
    private readonly user: string,
    private readonly secret: ScramSecret,
    /** False: a made-up secret for an unknown user, so the failure looks like a wrong password. */
    private readonly known: boolean,
  ) {}

  /** AuthenticationSASL, offering SCRAM-SHA-256 (no channel binding: the local hop has no TLS). */
  static begin(): Buffer {
    return encodeBackend({ type: 'AuthenticationSASL', mechanisms: [SCRAM_SHA_256] });
  }

  feed(chunk: Buffer): ScramStep {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    if (this.buf.length < 5) return { kind: 'more' };
    const type = this.buf[0]!;
    const length = this.buf.readInt32BE(1);
    if (type !== SASL_RESPONSE) return { kind: 'fail', sqlstate: SQLSTATE.PROTOCOL_VIOLATION, message: `expected a SASL response, got message type 0x${type.toString(16)}` };
    if (length < 4 || length > MAX_AUTH_MESSAGE_SIZE) return { kind: 'fail', sqlstate: SQLSTATE.PROTOCOL_VIOLATION, message: `invalid SASL message length ${length}` };
    if (this.buf.length < 1 + length) return { kind: 'more' };
    const body = Buffer.from(this.buf.subarray(5, 1 + length));
    const rest = Buffer.from(this.buf.subarray(1 + length));
    this.buf = Buffer.alloc(0);
    try {
      if (this.state === null) {
        const m = decodeAuthenticationResponse({ type: 'AuthenticationResponse', data: body }, 'SASLInitialResponse');
        if (m.type !== 'SASLInitialResponse' || m.mechanism !== SCRAM_SHA_256 || m.data === null) {
          return { kind: 'fail', sqlstate: SQLSTATE.PROTOCOL_VIOLATION, message: 'expected SCRAM-SHA-256' };
        }
        const first = scramServerFirst(m.data.toString('utf8'), this.secret);
        this.state = first.state;
        return { kind: 'send', bytes: encodeBackend({ type: 'AuthenticationSASLContinue', data: Buffer.from(first.message) }) };
      }
      const m = decodeAuthenticationResponse({ type: 'AuthenticationResponse', data: body }, 'SASLResponse');
      if (m.type !== 'SASLResponse') return { kind: 'fail', sqlstate: SQLSTATE.PROTOCOL_VIOLATION, message: 'expected a SASL response' };
      const verdict = verifyScramClientFinal(this.state, m.data.toString('utf8'));
      if (!verdict.ok || !this.known) return this.wrongPassword();
      return { kind: 'ok', bytes: encodeBackend({ type: 'AuthenticationSASLFinal', data: Buffer.from(verdict.serverFinal) }), rest };
    } catch (e) {
      if (e instanceof ScramError) return this.wrongPassword();
      if (e instanceof ProtocolError) return { kind: 'fail', sqlstate: SQLSTATE.PROTOCOL_VIOLATION, message: e.message };
      throw e;
    }
  }

  private wrongPassword(): ScramStep {
    return { kind: 'fail', sqlstate: SQLSTATE.INVALID_PASSWORD, message: `password authentication failed for user "${this.user}"` };
  }
}

/** The local password list, as SCRAM secrets (plaintext passwords are turned into one at start). */
export class LocalPasswords {
  private readonly secrets = new Map<string, ScramSecret>();
  /** For unknown users: an exchange that always fails, like a wrong password. */
  private readonly unknown = parseScramSecret(makeScramSecret(randomBytes(24).toString('base64')));

  constructor(passwords: LocalChecksOptions['passwords']) {
    const entries = passwords === undefined ? [] : passwords instanceof Map ? [...passwords] : Object.entries(passwords);
    for (const [user, value] of entries) {
      this.secrets.set(user, parseScramSecret(value.startsWith('SCRAM-SHA-256$') ? value : makeScramSecret(value)));
    }
  }

  get size(): number {
    return this.secrets.size;
  }

  exchange(user: string): LocalScram {
    const s = this.secrets.get(user);
    return new LocalScram(user, s ?? this.unknown, s !== undefined);
  }
}

/** The OS user name of a uid, from /etc/passwd (null when it has none there). */
export async function osUserName(uid: number): Promise<string | null> {
  try {
    if (uid === process.getuid?.()) return userInfo().username;
  } catch {
    // no passwd entry for ourselves either: read the file
  }
  let text: string;
  try {
    text = await readFile('/etc/passwd', 'utf8');
  } catch {
    return null;
  }
  for (const line of text.split('\n')) {
    const f = line.split(':');
    if (f.length >= 3 && Number(f[2]) === uid && f[0] !== undefined && f[0] !== '') return f[0];
  }
  return null;
}
