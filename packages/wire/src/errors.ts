import { SQLSTATE } from './sqlstate.js';

/**
 * Malformed protocol input. The pooler answers it with an ErrorResponse carrying
 * `sqlstate` (always 08P01, protocol_violation) and closes the connection.
 * `offset` is the byte position in the decoded stream where the problem was found.
 */
export class ProtocolError extends Error {
  readonly sqlstate = SQLSTATE.PROTOCOL_VIOLATION;
  readonly offset: number;

  constructor(message: string, offset: number) {
    super(`${message} (at byte ${offset})`);
    this.name = 'ProtocolError';
    this.offset = offset;
  }
}
