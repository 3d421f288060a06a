// Does a statement leave state behind in the backend's session (beyond its transaction)? In
// transaction pooling the backend goes to other clients next, so a backend that may carry such
// state is reset (server reset query) when released. A cheap, conservative look at the text:
// every statement start (after ';', skipping comments) is checked, so it may reset a backend
// needlessly (a ';' inside a string literal), but does not miss the statements listed below
// within the first SCAN_LIMIT bytes of a query.
const STATEMENT_START =
  /(?:^|;)(?:\s|--[^\n]*(?:\n|$)|\/\*[\s\S]*?\*\/)*(?:set\s+(?!local\b|transaction\b|constraints\b)|reset\b|prepare\b|listen\b|load\b|discard\b|declare\b[^;]*\bwith\s+hold\b|create\s+(?:(?:global|local)\s+)?(?:temp|temporary)\b)/i;
/** Function calls that change session state from inside any statement. */
const ANYWHERE = /set_config|advisory_lock|dblink_connect/i;
/** Queries are examined up to this many bytes (bounded cost for huge literal-laden statements). */
const SCAN_LIMIT = 64 * 1024;

function check(bytes: Buffer, textStart: number): boolean {
  const text = bytes.toString('latin1', textStart, Math.min(bytes.length - 1, textStart + SCAN_LIMIT));
  return STATEMENT_START.test(text) || ANYWHERE.test(text);
}

/** For a raw Query ('Q') or Parse ('P') message: may it change session state? */
export function mayChangeSessionState(type: number, bytes: Buffer): boolean {
  if (type === 0x51) return check(bytes, 5);
  if (type === 0x50) {
    const nameEnd = bytes.indexOf(0, 5);
    // A named prepared statement outlives its transaction.
    return nameEnd !== 5 || check(bytes, nameEnd + 1);
  }
  return false;
}
