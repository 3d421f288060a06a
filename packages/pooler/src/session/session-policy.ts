// The 'reject' session-state policy: a statement that would leave session state on a shared
// backend is replaced by one that fails with 0A000, so the client gets a server-made error in the
// right place of its stream (and its transaction is aborted, as for any error).
import { encodeFrontend, MessageType } from '@quicpool/wire';
import { replaceParseQuery } from '../prepared/wire-names.js';

export const REJECTED_MESSAGE =
  'quicpool: statement would leave session state on a shared server connection (transaction pooling, sessionStatePolicy reject); use session pooling, or SET LOCAL / transaction-scoped alternatives';

const REJECT_SQL = `DO $quicpool$BEGIN RAISE EXCEPTION USING ERRCODE = '0A000', MESSAGE = '${REJECTED_MESSAGE}'; END$quicpool$`;
const REJECT_QUERY = encodeFrontend({ type: 'Query', query: REJECT_SQL });

/** The replacement of a rejected Query ('Q') or Parse ('P'). */
export function rejectedStatement(type: number, bytes: Buffer): Buffer {
  return type === MessageType.Parse ? replaceParseQuery(bytes, REJECT_SQL) : REJECT_QUERY;
}
