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

function check(bytes: Buffer, textStart: number): string | null {
  const text = bytes.toString('latin1', textStart, Math.min(bytes.length - 1, textStart + SCAN_LIMIT));
  const start = STATEMENT_START.exec(text);
  if (start !== null) return statementName(start[0]);
  const call = ANYWHERE.exec(text);
  return call === null ? null : call[0].toLowerCase();
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
