// The read-only 0-RTT policy's test of a client message: may it run before the QUIC handshake is
// confirmed (inside a READ ONLY transaction the pooler opens)? Only a simple-protocol Query
// holding exactly one statement whose first keyword reads (SELECT, WITH, VALUES, TABLE, SHOW).
// Conservative by construction: anything the scan does not fully understand (an unterminated
// literal or comment, a second statement, a text beyond SCAN_LIMIT) waits for confirmation.
// PostgreSQL's READ ONLY check is the safety net behind it: a WITH that writes, SELECT INTO,
// SELECT FOR UPDATE, nextval() ... fail with 25006 there.
import { encodeFrontend, MessageType } from '@quicpool/wire';

const READING = new Set(['select', 'with', 'values', 'table', 'show']);
/** Longer queries simply wait for confirmation (bounded scan cost). */
const SCAN_LIMIT = 16 * 1024;

/** The pooler's own statements around an early query (their answers are swallowed). */
export const BEGIN_READ_ONLY = encodeFrontend({ type: 'Query', query: 'BEGIN READ ONLY' });
export const COMMIT = encodeFrontend({ type: 'Query', query: 'COMMIT' });

/** A raw client message: may it run before confirmation under the read-only policy? */
export function runsBeforeConfirmation(type: number, bytes: Buffer): boolean {
  if (type !== MessageType.Query) return false; // extended protocol, COPY data, FunctionCall: wait
  const end = bytes.length - 1; // the text's terminating NUL
  if (end - 5 > SCAN_LIMIT || bytes[end] !== 0) return false;
  const text = bytes.toString('latin1', 5, end);
  const first = firstKeyword(text);
  return first !== null && READING.has(first.word) && singleStatement(text, first.end);
}

function firstKeyword(text: string): { word: string; end: number } | null {
  const start = skipSpaceAndComments(text, 0);
  if (start < 0) return null;
  let i = start;
  while (i < text.length && /[A-Za-z]/.test(text[i]!)) i++;
  if (i === start) return null;
  return { word: text.slice(start, i).toLowerCase(), end: i };
}

/** Index of the first character that is neither white space nor inside a comment; -1 if a comment never ends. */
function skipSpaceAndComments(text: string, from: number): number {
  let i = from;
  for (;;) {
    while (i < text.length && /\s/.test(text[i]!)) i++;
    if (text.startsWith('--', i)) {
      const nl = text.indexOf('\n', i);
      i = nl < 0 ? text.length : nl + 1;
    } else if (text.startsWith('/*', i)) {
      i = blockCommentEnd(text, i);
      if (i < 0) return -1;
    } else {
      return i;
    }
  }
}

/** Block comments nest in PostgreSQL. Returns the index after the comment, -1 if unterminated. */
function blockCommentEnd(text: string, from: number): number {
  let depth = 0;
  let i = from;
  while (i < text.length) {
    if (text.startsWith('/*', i)) {
      depth++;
      i += 2;
    } else if (text.startsWith('*/', i)) {
      depth--;
      i += 2;
      if (depth === 0) return i;
    } else {
      i++;
    }
  }
  return -1;
}

/**
 * True when nothing but white space and comments follows the first ';' outside literals, quoted
 * identifiers, dollar quotes and comments (one statement, maybe with a trailing ';').
 */
function singleStatement(text: string, from: number): boolean {
  let i = from;
  while (i < text.length) {
    const c = text[i]!;
    if (c === ';') {
      const rest = skipSpaceAndComments(text, i + 1);
      return rest === text.length;
    }
    if (c === "'") {
      // E'...' strings treat backslash as an escape; standard strings only double the quote.
      const escapes = i > 0 && /[eE]/.test(text[i - 1]!) && (i < 2 || !/[\w$]/.test(text[i - 2]!));
      i = quotedEnd(text, i, "'", escapes);
    } else if (c === '"') {
      i = quotedEnd(text, i, '"', false);
    } else if (c === '$') {
      i = dollarQuoteEnd(text, i);
    } else if (text.startsWith('--', i) || text.startsWith('/*', i)) {
      i = skipSpaceAndComments(text, i);
    } else {
      i++;
    }
    if (i < 0) return false;
  }
  return true;
}

function quotedEnd(text: string, from: number, quote: string, escapes: boolean): number {
  let i = from + 1;
  while (i < text.length) {
    const c = text[i]!;
    if (escapes && c === '\\') {
      i += 2;
    } else if (c === quote) {
      if (text[i + 1] === quote) i += 2;
      else return i + 1;
    } else {
      i++;
    }
  }
  return -1;
}

/** `$tag$ ... $tag$`; a `$` that starts no dollar quote (a parameter `$1`) is skipped. */
function dollarQuoteEnd(text: string, from: number): number {
  const m = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(text.slice(from, from + 64));
  if (m === null) return from + 1;
  // A tag right after an identifier character is part of that identifier (a$b$), not a quote.
  if (from > 0 && /[\w]/.test(text[from - 1]!)) return from + 1;
  const tag = m[0];
  const close = text.indexOf(tag, from + tag.length);
  return close < 0 ? -1 : close + tag.length;
}
