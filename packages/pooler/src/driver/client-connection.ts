// A client session's driver (session-driver.ts) with the plain lane (plain-lane.md): a transaction
// of one plain Query, in transaction pooling, goes from the client's read to a server connection
// and its answer back without the session machine's events, in the steps the machine's own
// shortcuts allow (session/client-session.ts); here is their I/O.
import { bufferView, messageLength, MessageType } from '@quicpool/wire';
import type { Backend } from '../backend/backend.js';
import { isPlainAnswer } from '../session/plain-answer.js';
import { CLEAN_RELEASE } from '../session/transaction.js';
import { SessionDriver } from './session-driver.js';

export class ClientConnection extends SessionDriver {
  /**
   * `chunk[0, length)` is one whole Query, and the session, idle, holds it for a backend with
   * nothing to decide yet: the pool is asked for one at once, as the session's actions would.
   * Else false, with nothing done.
   */
  protected plainQuery(chunk: Buffer, length: number): boolean {
    const pool = this.pool;
    if (pool === null || !this.core.plainLane || this.paused !== 0 || this.ended || this.events.busy || chunk[0] !== MessageType.Query || length < 6 || this.decoder.bufferedBytes !== 0) return false;
    const size = messageLength(chunk, 0);
    if (size + 1 !== length || size > this.core.config.maxMessageSize) return false;
    if (!this.session.plainHold(length === chunk.length ? chunk : bufferView(chunk, 0, length))) return false;
    this.decoder.skip(length);
    this.setTimer('clientIdle', false);
    this.requestBackend(pool);
    return true;
  }

  /** The backend `b` for a session holding one Query that goes to it unchanged: sent at once, as the session's actions would. */
  protected plainAttach(b: Backend): boolean {
    const query = this.events.busy || !this.core.plainLane ? null : this.session.plainAttach(b);
    if (query === null) return false;
    this.setTimer('query', true);
    this.toBackend(b, query, true);
    return true;
  }

  /**
   * The backend's read `chunk[0, length)`: when it is a whole answer of messages this client only
   * forwards, ending in ReadyForQuery 'I' (session/plain-answer.ts), and all the session was owed,
   * it goes to the client, the backend back to the pool, with what the session's actions would do
   * (timers, traffic), and true. Else false, with nothing done.
   */
  plainAnswer(chunk: Buffer, length: number): boolean {
    if (this.backend === null || this.pool === null || this.events.busy || !this.core.plainLane || !isPlainAnswer(chunk, length) || !this.session.plainAnswered()) return false;
    this.setTimer('query', false);
    this.toClient(length === chunk.length ? chunk : bufferView(chunk, 0, length), true);
    this.traffic.plainXacts++;
    this.releaseBackend(CLEAN_RELEASE);
    this.setTimer('clientIdle', true);
    return true;
  }
}
