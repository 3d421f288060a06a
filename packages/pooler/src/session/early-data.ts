// The read-only 0-RTT policy inside one session (SessionContext.readOnlyEarlyData): until the
// QUIC handshake is confirmed, a client message goes to a backend only when it is a single
// read-only Query (read-only-early.ts), and then inside the pooler's own BEGIN READ ONLY ...
// COMMIT, whose answers the client never sees except the COMMIT's ReadyForQuery in place of the
// query's (status idle). Anything else waits for the confirmation, and so does everything after
// it (the order is kept).
import { MessageType } from '@quicpool/wire';
import type { HeldMessages } from './held-messages.js';
import { BEGIN_READ_ONLY, COMMIT, runsBeforeConfirmation } from './read-only-early.js';
import type { TransactionTracker } from './transaction.js';

export class EarlyDataGate {
  /** The handshake is not confirmed yet. */
  private unconfirmed: boolean;

  /** `guards`: the policy applies to this session (the driver reports the confirmation). */
  constructor(readonly guards: boolean) {
    this.unconfirmed = guards;
  }

  /** Must this client message wait for the confirmation (`held` keeps those that already do)? */
  mustWait(type: number, bytes: Buffer, held: HeldMessages): boolean {
    return this.unconfirmed && (held.anyEarly || !runsBeforeConfirmation(type, bytes));
  }

  /** Does this message, forwarded now, go inside the pooler's read-only transaction? */
  wraps(type: number): boolean {
    return this.unconfirmed && type === MessageType.Query;
  }

  /** The query inside BEGIN READ ONLY ... COMMIT: `forward` sends the query itself. */
  wrap(tx: TransactionTracker, toBackend: (bytes: Buffer) => void, forward: () => void): void {
    tx.ownStatement('own');
    toBackend(BEGIN_READ_ONLY);
    tx.ownStatement('wrapped');
    forward();
    tx.ownStatement('closing');
    toBackend(COMMIT);
  }

  /** The handshake is confirmed; true the first time (what waited goes on, in order). */
  confirm(): boolean {
    if (!this.unconfirmed) return false;
    this.unconfirmed = false;
    return true;
  }
}
