// Byte-level helpers for the few extended-protocol messages whose statement name the pooler
// rewrites (Parse, Bind, Describe, Close). They splice the name field and copy the rest of the
// message as it is: no full decode/encode, and nothing of this runs for unnamed statements.
import { createHash } from 'node:crypto';

import { encodeBackend, encodeFrontend, MessageType } from '@quicpool/wire';

/** Describe and Close name their target with this byte: 'S' a prepared statement ('P' a portal). */
const TARGET_STATEMENT = 0x53;

function cstring(bytes: Buffer, start: number): { value: string; end: number } {
  const end = bytes.indexOf(0, start);
  if (end < 0) throw new RangeError('unterminated string in message');
  return { value: bytes.toString('utf8', start, end), end };
}

function frame(type: number, parts: readonly Buffer[]): Buffer {
  let len = 4;
  for (const p of parts) len += p.length;
  const out = Buffer.allocUnsafe(len + 1);
  out[0] = type;
  out.writeInt32BE(len, 1);
  let at = 5;
  for (const p of parts) at += p.copy(out, at);
  return out;
}

const z = (s: string): Buffer => Buffer.from(`${s}\0`, 'utf8');

/** Parse: statement name, and where the rest (query, parameter types) starts. */
export function parseName(bytes: Buffer): { name: string; restStart: number } {
  const n = cstring(bytes, 5);
  return { name: n.value, restStart: n.end + 1 };
}

/** The query text and parameter-type bytes of a Parse, as the key of the statement's identity. */
export function parseBody(bytes: Buffer, restStart: number): Buffer {
  return bytes.subarray(restStart);
}

export function renameParse(bytes: Buffer, restStart: number, name: string): Buffer {
  return frame(MessageType.Parse, [z(name), bytes.subarray(restStart)]);
}

/**
 * A Parse with a new query text that takes as many parameters as the old one ($n it mentions, or
 * types it declared; undeclared ones become text), so the client's Bind still fits.
 */
export function replaceParseQuery(bytes: Buffer, query: string): Buffer {
  const name = cstring(bytes, 5);
  const q = cstring(bytes, name.end + 1);
  let count = 0;
  for (const m of q.value.matchAll(/\$(\d{1,5})/g)) count = Math.max(count, Number(m[1]));
  const declared = bytes.readInt16BE(q.end + 1);
  const n = Math.max(count, declared);
  const types = Buffer.alloc(2 + 4 * n);
  types.writeInt16BE(n, 0);
  for (let i = 0; i < n; i++) types.writeInt32BE(i < declared ? bytes.readInt32BE(q.end + 3 + 4 * i) : 25, 2 + 4 * i);
  return frame(MessageType.Parse, [bytes.subarray(5, name.end + 1), z(query), types]);
}

/** Bind: the statement name (after the portal name) and its byte range. */
export function bindStatement(bytes: Buffer): { name: string; start: number; end: number } {
  const portal = cstring(bytes, 5);
  const s = cstring(bytes, portal.end + 1);
  return { name: s.value, start: portal.end + 1, end: s.end };
}

export function renameBind(bytes: Buffer, start: number, end: number, name: string): Buffer {
  return frame(MessageType.Bind, [bytes.subarray(5, start), z(name), bytes.subarray(end + 1)]);
}

/** Describe/Close of a statement ('S'): its name; undefined for a portal ('P'). */
export function statementTarget(bytes: Buffer): string | undefined {
  if (bytes[5] !== TARGET_STATEMENT) return undefined;
  return cstring(bytes, 6).value;
}

export function targetMessage(type: number, name: string): Buffer {
  return frame(type, [Buffer.from([TARGET_STATEMENT]), z(name)]);
}

export const SYNC = encodeFrontend({ type: 'Sync' });
export const PARSE_COMPLETE = encodeBackend({ type: 'ParseComplete' });
export const CLOSE_COMPLETE = encodeBackend({ type: 'CloseComplete' });

/**
 * The pooler-wide name of a statement: same text, parameter types and search_path give the same
 * name on every backend, for every client. search_path is part of it because it decides which
 * tables the text means.
 */
export function poolerName(body: Buffer, scope: string): string {
  const h = createHash('sha256').update(scope).update('\0').update(body).digest('base64url');
  return `qp_${h.slice(0, 22)}`;
}

/** The command tag of a CommandComplete message. */
export function commandTag(bytes: Buffer): string {
  return bytes.toString('utf8', 5, Math.max(5, bytes.length - 1));
}
