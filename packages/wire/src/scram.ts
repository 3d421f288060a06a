/**
 * SCRAM-SHA-256 (RFC 5802 / RFC 7677) as PostgreSQL uses it, both sides, as pure
 * functions over strings (node:crypto for the math; no I/O). No channel binding
 * (gs2 header "n,," or "y,,"): a pooler terminates TLS/QUIC itself.
 *
 * Passwords: Postgres applies SASLprep and falls back to the raw bytes when that
 * fails. Here ASCII passwords are used as-is (what SASLprep yields for them) and
 * others are NFKC-normalised, which matches SASLprep for common input but not
 * for every prohibited-character corner case.
 */
import { createHash, createHmac, pbkdf2Sync, randomBytes, timingSafeEqual } from 'node:crypto';

export const SCRAM_SHA_256 = 'SCRAM-SHA-256';
const GS2_HEADER = 'n,,';

export class ScramError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ScramError';
  }
}

const hmac = (key: Buffer, data: string | Buffer): Buffer => createHmac('sha256', key).update(data).digest();
const sha256 = (data: Buffer): Buffer => createHash('sha256').update(data).digest();
const xor = (a: Buffer, b: Buffer): Buffer => Buffer.from(a.map((x, i) => x ^ b[i]!));

function normalizePassword(password: string): string {
  return /^[\x20-\x7e]*$/.test(password) ? password : password.normalize('NFKC');
}

/** SaltedPassword := Hi(Normalize(password), salt, i). */
export function saltedPassword(password: string, salt: Buffer, iterations: number): Buffer {
  return pbkdf2Sync(normalizePassword(password), salt, iterations, 32, 'sha256');
}

/** Parse "a=x,b=y" attributes; keys are single letters, values may contain '='. */
function attributes(message: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of message.split(',')) {
    if (part.length < 2 || part[1] !== '=') throw new ScramError(`malformed SCRAM attribute "${part}"`);
    out.set(part[0]!, part.slice(2));
  }
  return out;
}

function required(attrs: Map<string, string>, key: string, what: string): string {
  const v = attrs.get(key);
  if (v === undefined || v === '') throw new ScramError(`SCRAM ${what} missing "${key}="`);
  return v;
}

function isPrintableNonce(s: string): boolean {
  return /^[\x21-\x2b\x2d-\x7e]+$/.test(s);
}

// ---------------------------------------------------------------- client side

export interface ScramClientFirst {
  /** The client-first-message (SASLInitialResponse data). */
  readonly message: string;
  /** client-first-message-bare, part of the AuthMessage. */
  readonly bare: string;
  readonly nonce: string;
}

/** Start an exchange. Postgres ignores the SCRAM user name (it has the startup user): empty by default. */
export function scramClientFirst(nonce = randomBytes(18).toString('base64'), user = ''): ScramClientFirst {
  if (!isPrintableNonce(nonce)) throw new ScramError('nonce must be printable ASCII without ","');
  const bare = `n=${user.replace(/=/g, '=3D').replace(/,/g, '=2C')},r=${nonce}`;
  return { message: GS2_HEADER + bare, bare, nonce };
}

export interface ScramServerFirst {
  readonly nonce: string;
  readonly salt: Buffer;
  readonly iterations: number;
}

export function parseScramServerFirst(serverFirst: string, clientNonce: string): ScramServerFirst {
  const a = attributes(serverFirst);
  if (a.has('m')) throw new ScramError('unsupported SCRAM extension');
  const nonce = required(a, 'r', 'server-first-message');
  const salt = Buffer.from(required(a, 's', 'server-first-message'), 'base64');
  const iterations = Number(required(a, 'i', 'server-first-message'));
  if (!nonce.startsWith(clientNonce) || nonce.length === clientNonce.length) throw new ScramError('server nonce does not extend the client nonce');
  if (!Number.isInteger(iterations) || iterations < 1) throw new ScramError(`invalid iteration count ${iterations}`);
  if (salt.length === 0) throw new ScramError('empty salt');
  return { nonce, salt, iterations };
}

export interface ScramClientFinal {
  /** The client-final-message (SASLResponse data). */
  readonly message: string;
  /** The ServerSignature the server must prove, base64. */
  readonly expectedServerSignature: string;
}

/** Answer the server-first-message with a proof of the password. */
export function scramClientFinal(first: ScramClientFirst, serverFirst: string, password: string): ScramClientFinal {
  const s = parseScramServerFirst(serverFirst, first.nonce);
  const salted = saltedPassword(password, s.salt, s.iterations);
  const clientKey = hmac(salted, 'Client Key');
  const storedKey = sha256(clientKey);
  const withoutProof = `c=${Buffer.from(GS2_HEADER).toString('base64')},r=${s.nonce}`;
  const authMessage = `${first.bare},${serverFirst},${withoutProof}`;
  const proof = xor(clientKey, hmac(storedKey, authMessage));
  const serverSignature = hmac(hmac(salted, 'Server Key'), authMessage);
  return {
    message: `${withoutProof},p=${proof.toString('base64')}`,
    expectedServerSignature: serverSignature.toString('base64'),
  };
}

/** Check the server-final-message ("v=..." or "e=..."); throws ScramError unless the server proved the secret. */
export function verifyScramServerFinal(serverFinal: string, final: ScramClientFinal): void {
  const a = attributes(serverFinal);
  const e = a.get('e');
  if (e !== undefined) throw new ScramError(`server rejected authentication: ${e}`);
  const v = Buffer.from(required(a, 'v', 'server-final-message'), 'base64');
  const expected = Buffer.from(final.expectedServerSignature, 'base64');
  if (v.length !== expected.length || !timingSafeEqual(v, expected)) throw new ScramError('server signature mismatch');
}

// ---------------------------------------------------------------- server side

/** A stored SCRAM secret, as in pg_authid.rolpassword. */
export interface ScramSecret {
  readonly iterations: number;
  readonly salt: Buffer;
  readonly storedKey: Buffer;
  readonly serverKey: Buffer;
}

/** Parse `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>` (base64 parts). */
export function parseScramSecret(secret: string): ScramSecret {
  const m = /^SCRAM-SHA-256\$(\d+):([A-Za-z0-9+/=]+)\$([A-Za-z0-9+/=]+):([A-Za-z0-9+/=]+)$/.exec(secret);
  if (m === null) throw new ScramError('not a SCRAM-SHA-256 secret');
  const storedKey = Buffer.from(m[3]!, 'base64');
  const serverKey = Buffer.from(m[4]!, 'base64');
  const iterations = Number(m[1]);
  if (storedKey.length !== 32 || serverKey.length !== 32 || iterations < 1) throw new ScramError('malformed SCRAM-SHA-256 secret');
  return { iterations, salt: Buffer.from(m[2]!, 'base64'), storedKey, serverKey };
}

/** Build a stored secret from a password, as Postgres does for password_encryption=scram-sha-256. */
export function makeScramSecret(password: string, salt = randomBytes(16), iterations = 4096): string {
  const salted = saltedPassword(password, salt, iterations);
  const storedKey = sha256(hmac(salted, 'Client Key'));
  const serverKey = hmac(salted, 'Server Key');
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}

export interface ScramServerState {
  readonly secret: ScramSecret;
  readonly gs2Header: string;
  readonly clientFirstBare: string;
  readonly serverFirst: string;
  readonly nonce: string;
}

/** Answer a client-first-message (the SASLInitialResponse data) with the server-first-message. */
export function scramServerFirst(
  clientFirst: string,
  secret: ScramSecret,
  serverNonce = randomBytes(18).toString('base64'),
): { message: string; state: ScramServerState } {
  const m = /^([ny]),(a=[^,]*)?,(.*)$/s.exec(clientFirst);
  if (m === null) {
    throw new ScramError(clientFirst.startsWith('p=') ? 'channel binding is not supported' : 'malformed client-first-message');
  }
  const gs2Header = `${m[1]},${m[2] ?? ''},`;
  const clientFirstBare = m[3]!;
  const a = attributes(clientFirstBare);
  if (a.has('m')) throw new ScramError('unsupported SCRAM extension');
  if (!a.has('n')) throw new ScramError('client-first-message missing "n="');
  const clientNonce = required(a, 'r', 'client-first-message');
  if (!isPrintableNonce(clientNonce) || !isPrintableNonce(serverNonce)) throw new ScramError('invalid nonce');
  const nonce = clientNonce + serverNonce;
  const message = `r=${nonce},s=${secret.salt.toString('base64')},i=${secret.iterations}`;
  return { message, state: { secret, gs2Header, clientFirstBare, serverFirst: message, nonce } };
}

/**
 * Verify a client-final-message (the SASLResponse data) against the stored secret.
 * On success returns the server-final-message to send in AuthenticationSASLFinal, and the
 * ClientKey the proof revealed (what a pooler needs to log in to a server holding the same
 * secret on this client's behalf, as PgBouncer's auth_query does).
 */
export function verifyScramClientFinal(
  state: ScramServerState,
  clientFinal: string,
): { ok: true; serverFinal: string; clientKey: Buffer } | { ok: false; reason: string } {
  let a: Map<string, string>;
  try {
    a = attributes(clientFinal);
  } catch (e) {
    return { ok: false, reason: (e as Error).message };
  }
  const proofB64 = a.get('p');
  const idx = clientFinal.lastIndexOf(',p=');
  if (proofB64 === undefined || idx < 0) return { ok: false, reason: 'client-final-message without proof' };
  if (a.get('c') !== Buffer.from(state.gs2Header).toString('base64')) return { ok: false, reason: 'channel binding mismatch' };
  if (a.get('r') !== state.nonce) return { ok: false, reason: 'nonce mismatch' };
  const withoutProof = clientFinal.slice(0, idx);
  const authMessage = `${state.clientFirstBare},${state.serverFirst},${withoutProof}`;
  const proof = Buffer.from(proofB64, 'base64');
  if (proof.length !== 32) return { ok: false, reason: 'malformed proof' };
  const clientKey = xor(proof, hmac(state.secret.storedKey, authMessage));
  if (!timingSafeEqual(sha256(clientKey), state.secret.storedKey)) return { ok: false, reason: 'wrong password' };
  const serverSignature = hmac(state.secret.serverKey, authMessage);
  return { ok: true, serverFinal: `v=${serverSignature.toString('base64')}`, clientKey };
}
