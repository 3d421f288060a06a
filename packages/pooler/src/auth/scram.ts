// SCRAM-SHA-256 for the pooler, on top of @quicpool/wire's SCRAM functions: a server-side
// exchange object for client authentication, and a client for logging in to the real server.
// No channel binding is offered (SCRAM-SHA-256-PLUS needs the TLS certificate hash, which QUIC
// streams do not expose). Secrets use Postgres's format
// `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`.
import { pbkdf2 } from 'node:crypto';
import {
  makeScramSecret,
  parseScramSecret as parseWireSecret,
  parseScramServerFirst,
  SCRAM_SHA_256,
  ScramError,
  scramClientFirst,
  scramServerFirst,
  verifyScramClientFinal,
  verifyScramServerFinal,
} from '@quicpool/wire';
import type { ScramClientFinal, ScramClientFirst, ScramSecret, ScramServerState } from '@quicpool/wire';
import { createHash, createHmac } from 'node:crypto';

export { SCRAM_SHA_256 };
export type { ScramSecret };

/** Postgres's default `scram_iterations`. */
export const DEFAULT_SCRAM_ITERATIONS = 4096;
/** Longest SCRAM message accepted from a client (Postgres: PG_MAX_AUTH_TOKEN_LENGTH is larger; these are tiny). */
const MAX_SCRAM_MESSAGE = 1024;

/** Parses a Postgres SCRAM secret; undefined if malformed. */
export function parseScramSecret(text: string): ScramSecret | undefined {
  try {
    return parseWireSecret(text);
  } catch (e) {
    if (e instanceof ScramError) return undefined;
    throw e;
  }
}

/** Builds a secret from a plaintext password (what `CREATE ROLE ... PASSWORD` stores). */
export function scramSecretFromPassword(password: string, iterations = DEFAULT_SCRAM_ITERATIONS): ScramSecret {
  return parseWireSecret(makeScramSecret(password, undefined, iterations));
}

export function formatScramSecret(s: ScramSecret): string {
  return `SCRAM-SHA-256$${s.iterations}:${s.salt.toString('base64')}$${s.storedKey.toString('base64')}:${s.serverKey.toString('base64')}`;
}

export type ScramStep =
  | { readonly kind: 'continue'; readonly serverFirst: string }
  /** The client proved it knows the password; `clientKey` is what its proof revealed. */
  | { readonly kind: 'final'; readonly serverFinal: string; readonly clientKey: Buffer }
  | { readonly kind: 'fail'; readonly reason: string };

/**
 * Server side of one SCRAM exchange: `clientFirst` then `clientFinal`. Any protocol error or a
 * wrong proof yields 'fail' (the caller answers 28P01 without saying which).
 */
export class ScramServer {
  private state: ScramServerState | null = null;
  private step: 'first' | 'final' | 'done' = 'first';

  constructor(private readonly secret: ScramSecret) {}

  clientFirst(mechanism: string, data: Buffer | null): ScramStep {
    if (this.step !== 'first') return this.fail('unexpected SASLInitialResponse');
    if (mechanism !== SCRAM_SHA_256) return this.fail(`unsupported SASL mechanism ${JSON.stringify(mechanism)}`);
    if (data === null || data.length > MAX_SCRAM_MESSAGE) return this.fail('malformed SCRAM client-first-message');
    try {
      const { message, state } = scramServerFirst(data.toString('utf8'), this.secret);
      this.state = state;
      this.step = 'final';
      return { kind: 'continue', serverFirst: message };
    } catch (e) {
      if (e instanceof ScramError) return this.fail(e.message);
      throw e;
    }
  }

  clientFinal(data: Buffer): ScramStep {
    if (this.step !== 'final' || this.state === null) return this.fail('unexpected SASLResponse');
    if (data.length > MAX_SCRAM_MESSAGE) return this.fail('malformed SCRAM client-final-message');
    const r = verifyScramClientFinal(this.state, data.toString('utf8'));
    this.step = 'done';
    return r.ok ? { kind: 'final', serverFinal: r.serverFinal, clientKey: r.clientKey } : this.fail(r.reason);
  }

  private fail(reason: string): ScramStep {
    this.step = 'done';
    return { kind: 'fail', reason };
  }
}

const hmac = (key: Buffer, data: string): Buffer => createHmac('sha256', key).update(data).digest();
const sha256 = (data: Buffer): Buffer => createHash('sha256').update(data).digest();

/**
 * Client side, for logging in to the real server. Same messages as wire's `scramClientFinal`, but
 * PBKDF2 runs asynchronously (libuv's pool): a pooler must not block every session's event loop
 * for each backend it opens.
 */
/** What the client-side PBKDF2 needs (`deriveSaltedPassword`): slow by design, so done outside. */
export interface ScramDerivation {
  readonly password: string;
  readonly salt: Buffer;
  readonly iterations: number;
}

/**
 * The keys of a SCRAM secret a client's proof revealed (ClientKey) plus the secret's ServerKey:
 * enough to log in to a server holding that secret without knowing the password (auth_query).
 */
export interface ScramKeys {
  readonly clientKey: Buffer;
  readonly serverKey: Buffer;
}

/**
 * The client side of SCRAM-SHA-256, for logging in to the real server, without I/O and without
 * the slow step: `serverFirst` says what to derive, the caller derives it (asynchronously:
 * `deriveSaltedPassword`) and hands the result to `clientFinal`. Built from `ScramKeys` instead of
 * a password there is nothing to derive: `clientFinalFromKeys` answers server-first at once.
 */
export class ScramClient {
  private readonly first: ScramClientFirst = scramClientFirst();
  private serverFirstMessage: string | null = null;
  private nonce = '';
  private final: ScramClientFinal | null = null;

  constructor(private readonly password: string | ScramKeys) {}

  clientFirst(): Buffer {
    return Buffer.from(this.first.message);
  }

  /** Reads server-first; rejects a malformed or forged one and unreasonable iteration counts. */
  serverFirst(serverFirstData: Buffer): ScramDerivation {
    const s = this.readServerFirst(serverFirstData);
    if (typeof this.password !== 'string') throw new ScramError('built with SCRAM keys: use clientFinalFromKeys');
    // As wire's saltedPassword: SASLprep reduced to NFKC for non-ASCII passwords.
    const password = /^[\x20-\x7e]*$/.test(this.password) ? this.password : this.password.normalize('NFKC');
    return { password, salt: s.salt, iterations: s.iterations };
  }

  /** client-final, from the salted password derived for `serverFirst`. */
  clientFinal(salted: Buffer): Buffer {
    return this.finalWith(hmac(salted, 'Client Key'), hmac(salted, 'Server Key'));
  }

  /** Built with keys: nothing to derive. */
  get hasKeys(): boolean {
    return typeof this.password !== 'string';
  }

  /** Reads server-first and answers with client-final from the keys this client was built with. */
  clientFinalFromKeys(serverFirstData: Buffer): Buffer {
    this.readServerFirst(serverFirstData);
    if (typeof this.password === 'string') throw new ScramError('no SCRAM keys to answer with');
    return this.finalWith(this.password.clientKey, this.password.serverKey);
  }

  private readServerFirst(data: Buffer): { salt: Buffer; iterations: number } {
    const serverFirst = data.toString('utf8');
    const s = parseScramServerFirst(serverFirst, this.first.nonce);
    if (s.iterations > 10_000_000) throw new ScramError(`unreasonable SCRAM iteration count ${s.iterations}`);
    this.serverFirstMessage = serverFirst;
    this.nonce = s.nonce;
    return s;
  }

  private finalWith(clientKey: Buffer, serverKey: Buffer): Buffer {
    if (this.serverFirstMessage === null) throw new ScramError('clientFinal before serverFirst');
    const withoutProof = `c=${Buffer.from('n,,').toString('base64')},r=${this.nonce}`;
    const authMessage = `${this.first.bare},${this.serverFirstMessage},${withoutProof}`;
    const signature = hmac(sha256(clientKey), authMessage);
    const proof = Buffer.alloc(32);
    for (let i = 0; i < 32; i++) proof[i] = clientKey[i]! ^ signature[i]!;
    this.final = {
      message: `${withoutProof},p=${proof.toString('base64')}`,
      expectedServerSignature: hmac(serverKey, authMessage).toString('base64'),
    };
    return Buffer.from(this.final.message);
  }

  /** Checks the server's signature: a server that cannot produce it does not know the secret. */
  verifyServerFinal(data: Buffer): void {
    if (this.final === null) throw new ScramError('AuthenticationSASLFinal before SASLContinue');
    verifyScramServerFinal(data.toString('utf8'), this.final);
  }
}

/** PBKDF2-HMAC-SHA-256 on the thread pool (4,096 iterations take milliseconds of CPU). */
export function deriveSaltedPassword(d: ScramDerivation): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => pbkdf2(d.password, d.salt, d.iterations, 32, 'sha256', (e, key) => (e ? reject(e) : resolve(key))));
}
