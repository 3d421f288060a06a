// The lending of one server connection to one client. The pool makes a link when it hands a
// backend over (Pool.deliver) and ends it when it takes the backend back (release, close, loss):
// while it lasts, the link is the only thing that names the backend's client, and the backend
// sends what the server says to that client through it.
import type { RawMessage } from '@quicpool/wire';
import type { EncodedError } from '../runtime/encoded-error.js';
import type { Backend } from './backend.js';

/** What borrows server connections from a pool: a client session, or the pooler's own auth_query. */
export interface Waiter {
  /** Called once with an 'active' backend (its link names this waiter), or onError once; never both. */
  onBackend(b: Backend): void;
  onError(error: EncodedError): void;
  /** A message from the server, while the link lasts. */
  onBackendMessage(message: RawMessage): void;
  /** The server connection died while lent (the pool has already ended the link). */
  onBackendLost(reason: string): void;
  /**
   * Would the client only forward this message, unchanged, with nothing else to do? The message
   * is `buffer[start, ...)`; answering must change nothing. Such messages reach the client as
   * runs, through `forward`, instead of one onBackendMessage each.
   */
  passesThrough?(type: number, buffer: Buffer, start: number): boolean;
  /**
   * The plain lane (driver/plain-lane.md): `chunk[0, length)` is one server read, from a message
   * boundary. True when the client took it as the whole answer it was owed (and gave the backend
   * back); false, with nothing done, when the messages must go the usual way.
   */
  plainAnswer?(chunk: Buffer, length: number): boolean;
  /** One or more whole messages that passesThrough accepted, adjacent in the order received. */
  forward?(messages: Buffer): void;
}

export class Link {
  constructor(
    readonly client: Waiter,
    /** When the pool handed the backend over (clock ms). */
    readonly since: number,
    /** How long the client waited for it (ms). */
    readonly waitMs: number,
  ) {}
}
