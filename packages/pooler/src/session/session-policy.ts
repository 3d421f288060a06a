// The session-state policies of transaction pooling ('pin', 'reset', 'reject'), applied to a
// client's statement that would leave session state on a shared backend. Under 'reject' it is
// replaced by one that fails with 0A000, so the client gets a server-made error in the right place
// of its stream (and its transaction is aborted, as for any error).
import { encodeFrontend, MessageType } from '@quicpool/wire';
import { replaceParseQuery } from '../prepared/wire-names.js';
import { mayChangeSessionState, sessionStateChange } from './session-state-change.js';
import type { SessionStatePolicy } from './types.js';

export const REJECTED_MESSAGE =
  'quicpool: statement would leave session state on a shared server connection (transaction pooling, sessionStatePolicy reject); use session pooling, or SET LOCAL / transaction-scoped alternatives';

const REJECT_SQL = `DO $quicpool$BEGIN RAISE EXCEPTION USING ERRCODE = '0A000', MESSAGE = '${REJECTED_MESSAGE}'; END$quicpool$`;
const REJECT_QUERY = encodeFrontend({ type: 'Query', query: REJECT_SQL });

/** The replacement of a rejected Query ('Q') or Parse ('P'). */
export function rejectedStatement(type: number, bytes: Buffer): Buffer {
  return type === MessageType.Parse ? replaceParseQuery(bytes, REJECT_SQL) : REJECT_QUERY;
}

/** A transaction-pooled client's statements that leave session state, met with the pool's policy. */
export class SessionStateGuard {
  /** What pinned the client's backend to it (policy 'pin'), e.g. 'SET'; it keeps the backend until it goes. */
  pinnedBy: string | null = null;

  /** `policy`: the pool's, per database (known once authenticated). */
  constructor(public policy: SessionStatePolicy) {}

  /**
   * A client message on its way to the backend: what goes there instead (the same bytes unless
   * 'reject' replaces it). A Query or Parse is examined once (it scans the text): `routed`
   * (transaction pooling) applies the policy, else only the backend's need of a reset is noted.
   */
  examine(type: number, bytes: Buffer, routed: boolean, tx: { dirty: boolean }): Buffer {
    if (type !== MessageType.Query && type !== MessageType.Parse) return bytes;
    if (!routed) {
      if (!tx.dirty && mayChangeSessionState(type, bytes)) tx.dirty = true;
      return bytes;
    }
    const change = sessionStateChange(type, bytes);
    return change === null ? bytes : this.apply(type, bytes, change, tx);
  }

  /** The client runs `change` (it leaves session state): what goes to the backend instead of `bytes`. */
  private apply(type: number, bytes: Buffer, change: string, tx: { dirty: boolean }): Buffer {
    switch (this.policy) {
      case 'pin':
        this.pinnedBy ??= change;
        tx.dirty = true;
        return bytes;
      case 'reset':
        tx.dirty = true;
        return bytes;
      case 'reject':
        return rejectedStatement(type, bytes);
      default: {
        const never: never = this.policy;
        throw new Error(`unknown session state policy ${String(never)}`);
      }
    }
  }
}
