// Does a statement leave state behind in the backend's session (beyond its transaction)? In
// transaction pooling the backend goes to other clients next, so such a statement triggers the
// session-state policy (pin the backend to the client, reject, or reset it on release). A cheap,
// conservative look at the text: every statement start (after ';', skipping comments) is checked,
// so it may flag a statement needlessly (a ';' inside a string literal), but does not miss the
// statements listed below within the first SCAN_LIMIT bytes of a query.
//
// Not flagged, because the pooler carries them across backends itself: SET/RESET of the tracked
// parameters the server reports with ParameterStatus (re-applied on every backend; search_path is
// not reported before PostgreSQL 18, so its SET is flagged), RESET ALL, named prepared statements of the extended
// protocol (re-prepared on every backend), DEALLOCATE and DISCARD (they remove state).
import { MessageType } from '@quicpool/wire';

const TRACKED = String.raw`"?(?:application_name|client_encoding|datestyle|intervalstyle|timezone|standard_conforming_strings)"?\s*(?:=|to\b)|time\s+zone\b|names\b`;
const SET = String.raw`set\s+(?:session\s+(?!${TRACKED})|(?!session\s|local\b|transaction\b|constraints\b|${TRACKED}))`;
const RESET = String.raw`reset\s+(?!all\b|"?(?:application_name|client_encoding|datestyle|intervalstyle|timezone|standard_conforming_strings)\b|time\s+zone\b)`;
const STATEMENT_START = new RegExp(
  String.raw`(?:^|;)(?:\s|--[^\n]*(?:\n|$)|\/\*[\s\S]*?\*\/)*(?:${SET}|${RESET}|prepare\b|listen\b|load\b|declare\b[^;]*\bwith\s+hold\b|create\s+(?:(?:global|local)\s+)?(?:temp|temporary)\b)`,
  'i',
);
/** Function calls that change session state from inside any statement. */
const ANYWHERE = /set_config|advisory_lock|dblink_connect/i;
/** Queries are examined up to this many bytes (bounded cost for huge literal-laden statements). */
const SCAN_LIMIT = 64 * 1024;

/** What a flagged statement start is called in SHOW CLIENTS `pinned` (its leading keywords). */
function statementName(match: string): string {
  const words = match.replace(/^;/, '').replace(/--[^\n]*(?:\n|$)|\/\*[\s\S]*?\*\//g, ' ').trim().toUpperCase().split(/\s+/);
  switch (words[0]) {
    case 'DECLARE':
      return 'DECLARE WITH HOLD';
    case 'CREATE':
      return 'CREATE TEMP';
    default:
      return words[0] ?? '';
  }
}

/** What the two expressions find in a statement's text (see sessionStateChange), or null. */
export function matchText(text: string): string | null {
  const start = STATEMENT_START.exec(text);
  if (start !== null) return statementName(start[0]);
  const call = ANYWHERE.exec(text);
  return call === null ? null : call[0].toLowerCase();
}

/** STATEMENT_START's keywords as lower-case bytes: a statement that begins with none of them is clear. */
const KEYWORDS = ['set', 'reset', 'prepare', 'listen', 'load', 'declare', 'create'].map((k) => Buffer.from(k, 'latin1'));

/**
 * Could `matchText` find anything in the latin1 text of bytes [start, end)? A scan of the bytes
 * that makes no string: false only when neither expression can match, i.e. no statement start
 * (the text's start, or after a ';', past whitespace) begins with a comment or with one of
 * STATEMENT_START's keywords, and no '_' follows the three letters that precede it in ANYWHERE's
 * names ("set", "ory", "ink"). Most queries (pgbench's, an ORM's SELECT) are cleared by it; the
 * rest take the expressions, so the answer is always theirs.
 */
export function mayMatch(bytes: Buffer, start: number, end: number): boolean {
  let atStatementStart = true;
  for (let i = start; i < end; i++) {
    const b = bytes[i]!;
    if (atStatementStart) {
      // \s of a latin1 text: tab, LF, VT, FF, CR, space, no-break space.
      if (b === 0x20 || (b >= 0x09 && b <= 0x0d) || b === 0xa0) continue;
      if (b === 0x2d || b === 0x2f || startsKeyword(bytes, i, end)) return true; // '-', '/': a comment may hide one
      atStatementStart = false;
    }
    if (b === 0x3b) atStatementStart = true;
    else if (b === 0x5f && i - start >= 3 && namesFunction(bytes, i)) return true;
  }
  return false;
}

/** The bytes at `i` spell one of KEYWORDS, in any case (`| 0x20` lower-cases an ASCII letter; exact for letters). */
function startsKeyword(bytes: Buffer, i: number, end: number): boolean {
  const first = bytes[i]! | 0x20;
  for (const k of KEYWORDS) {
    if (k[0] !== first || i + k.length > end) continue;
    let j = 1;
    while (j < k.length && (bytes[i + j]! | 0x20) === k[j]) j++;
    if (j === k.length) return true;
  }
  return false;
}

/** The three letters before the '_' at `i` are those of set_config, advisory_lock or dblink_connect. */
function namesFunction(bytes: Buffer, i: number): boolean {
  const a = bytes[i - 3]! | 0x20;
  const b = bytes[i - 2]! | 0x20;
  const c = bytes[i - 1]! | 0x20;
  return (a === 0x73 && b === 0x65 && c === 0x74) || (a === 0x6f && b === 0x72 && c === 0x79) || (a === 0x69 && b === 0x6e && c === 0x6b);
}

function check(bytes: Buffer, textStart: number): string | null {
  const end = Math.min(bytes.length - 1, textStart + SCAN_LIMIT);
  if (!mayMatch(bytes, textStart, end)) return null;
  return matchText(bytes.toString('latin1', textStart, end));
}

/**
 * For a raw Query ('Q') or Parse ('P') message: may it leave session state behind? null when not,
 * else what does (for operators): the statement ('SET', 'RESET', 'PREPARE', 'LISTEN', 'LOAD',
 * 'DECLARE WITH HOLD', 'CREATE TEMP') or the function called ('set_config', 'advisory_lock',
 * 'dblink_connect').
 */
export function sessionStateChange(type: number, bytes: Buffer): string | null {
  if (type === MessageType.Query) return check(bytes, 5);
  if (type === MessageType.Parse) {
    const nameEnd = bytes.indexOf(0, 5);
    return check(bytes, nameEnd + 1);
  }
  return null;
}

export function mayChangeSessionState(type: number, bytes: Buffer): boolean {
  return sessionStateChange(type, bytes) !== null;
}
