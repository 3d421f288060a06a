// The pooler's answer to a session's StartupMessage, read by the agent up to its ReadyForQuery:
// what a fast start needs (the ParameterStatus values, the length of the cancel key) is learned
// from it, and the real BackendKeyData is taken from it. In a fast-started session the local client
// already has the agent's own answer, so the pooler's is absorbed: only what differs from what the
// agent announced (a ParameterStatus with another value, a notice), or the error that refused the
// login, reaches the client. Bytes in, verdicts out; no I/O.
import { encodeBackend, MessageType } from '@quicpool/wire';

/** What a login answered by AuthenticationOk, ParameterStatus*, BackendKeyData, ReadyForQuery('I') leaves to remember. */
export interface LoginRecord {
  /** The ParameterStatus values in the order the pooler sent them. */
  readonly parameters: readonly (readonly [string, string])[];
  /** Length of the BackendKeyData secret (4 in protocol 3.0). */
  readonly keyLength: number;
}

export interface BackendKey {
  readonly processId: number;
  readonly secretKey: Buffer;
}

export type LoginStep =
  /** Not at the login's ReadyForQuery yet; `forward` goes to the local client now. */
  | { readonly kind: 'more'; readonly forward: Buffer }
  /**
   * The login's ReadyForQuery was read: `forward` goes to the local client, then `rest` (what
   * followed it, forwarded raw from now on). `record`: what a fast start may announce next time.
   */
  | { readonly kind: 'ready'; readonly forward: Buffer; readonly rest: Buffer; readonly record: LoginRecord | null; readonly key: BackendKey | null }
  /** The pooler refused the login: `forward` (its ErrorResponse) goes to the local client, then the close. */
  | { readonly kind: 'refused'; readonly forward: Buffer; readonly sqlstate: string }
  /** The pooler asks for a password the agent cannot give (the local client was answered by the agent). */
  | { readonly kind: 'passwordRequested' }
  /** Not a login answer the agent can follow (too long, a bad length): the session must end. */
  | { readonly kind: 'broken'; readonly reason: string };

/** A login answer is a few hundred bytes; more than this before ReadyForQuery is not one we follow. */
export const MAX_LOGIN_ANSWER_BYTES = 64 * 1024;

const AUTH_OK = 0;
const EMPTY = Buffer.alloc(0);

export class LoginAnswer {
  private buf: Buffer = EMPTY;
  private readonly parameters: [string, string][] = [];
  private key: BackendKey | null = null;
  /** Something other than the plain answer came (a password request, a notice ...): nothing to learn. */
  private unusual = false;

  /**
   * `announced`: the values the agent already gave the local client (a fast start), whose own
   * answer then replaces the pooler's; null: the pooler's answer goes to the client as it is.
   * `answeredLocally`: the agent answered the client's authentication itself (a local check), so a
   * password request from the pooler cannot be passed on.
   */
  constructor(
    private readonly announced: ReadonlyMap<string, string> | null,
    private readonly answeredLocally: boolean,
  ) {}

  feed(chunk: Buffer): LoginStep {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    const out: Buffer[] = [];
    let at = 0;
    const b = this.buf;
    while (b.length - at >= 5) {
      const type = b[at]!;
      const length = b.readInt32BE(at + 1);
      if (length < 4) return { kind: 'broken', reason: `a message of length ${length} in the pooler's login answer` };
      const end = at + 1 + length;
      if (end > b.length) break;
      const m = b.subarray(at, end);
      at = end;
      switch (type) {
        case MessageType.Authentication: {
          if (length >= 8 && m.readInt32BE(5) === AUTH_OK) {
            if (this.announced === null) out.push(m);
            break;
          }
          if (this.announced !== null || this.answeredLocally) return { kind: 'passwordRequested' };
          this.unusual = true;
          out.push(m);
          break;
        }
        case MessageType.ParameterStatus: {
          const p = parameterStatus(m);
          if (p === null) return { kind: 'broken', reason: 'a malformed ParameterStatus in the pooler\'s login answer' };
          this.parameters.push(p);
          if (this.announced === null || this.announced.get(p[0]) !== p[1]) out.push(m);
          break;
        }
        case MessageType.BackendKeyData:
          if (length < 12) return { kind: 'broken', reason: 'a malformed BackendKeyData in the pooler\'s login answer' };
          this.key = { processId: m.readInt32BE(5), secretKey: Buffer.from(m.subarray(9)) };
          if (this.announced === null) out.push(m);
          break;
        case MessageType.ErrorResponse:
          out.push(m);
          if (this.announced === null) return this.ready(out, at, null); // the client reads the error itself
          return { kind: 'refused', forward: Buffer.concat(out), sqlstate: sqlstateOf(m) };
        case MessageType.ReadyForQuery: {
          const idle = length === 5 && m[5] === 0x49; // 'I'
          if (this.announced === null) out.push(m);
          const record = !this.unusual && idle && this.key !== null ? { parameters: this.parameters, keyLength: this.key.secretKey.length } : null;
          return this.ready(out, at, record);
        }
        default:
          // NoticeResponse, NegotiateProtocolVersion ...: passed on, and not a login to repeat.
          this.unusual = true;
          out.push(m);
      }
    }
    this.buf = at === 0 ? b : b.subarray(at);
    if (this.buf.length > MAX_LOGIN_ANSWER_BYTES) return { kind: 'broken', reason: `the pooler's login answer exceeds ${MAX_LOGIN_ANSWER_BYTES} bytes` };
    return { kind: 'more', forward: out.length === 0 ? EMPTY : out.length === 1 ? out[0]! : Buffer.concat(out) };
  }

  private ready(out: Buffer[], at: number, record: LoginRecord | null): LoginStep {
    const rest = this.buf.subarray(at);
    this.buf = EMPTY;
    return { kind: 'ready', forward: out.length === 1 ? out[0]! : Buffer.concat(out), rest, record, key: this.key };
  }
}

/** The agent's own answer to a StartupMessage: AuthenticationOk, the remembered values, its key, ReadyForQuery. */
export function localLoginAnswer(record: LoginRecord, key: BackendKey): Buffer {
  const parts: Buffer[] = [encodeBackend({ type: 'AuthenticationOk' })];
  for (const [name, value] of record.parameters) parts.push(encodeBackend({ type: 'ParameterStatus', name, value }));
  parts.push(encodeBackend({ type: 'BackendKeyData', processId: key.processId, secretKey: key.secretKey }));
  parts.push(encodeBackend({ type: 'ReadyForQuery', status: 'I' }));
  return Buffer.concat(parts);
}

function parameterStatus(m: Buffer): [string, string] | null {
  const nameEnd = m.indexOf(0, 5);
  if (nameEnd < 0) return null;
  const valueEnd = m.indexOf(0, nameEnd + 1);
  if (valueEnd !== m.length - 1) return null;
  return [m.toString('utf8', 5, nameEnd), m.toString('utf8', nameEnd + 1, valueEnd)];
}

/** The C field of an ErrorResponse ('' when absent). */
function sqlstateOf(m: Buffer): string {
  for (let i = 5; i < m.length && m[i] !== 0; ) {
    const end = m.indexOf(0, i + 1);
    if (end < 0) return '';
    if (m[i] === 0x43) return m.toString('latin1', i + 1, end); // 'C'
    i = end + 1;
  }
  return '';
}
