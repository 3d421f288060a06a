// The plain lane's look at a server read (driver/plain-lane.md): is it a whole answer that the
// client session only forwards, ending the request? Headers only: no decoder, no message objects.
import { messageLength, MessageType } from '@quicpool/wire';
import { sessionLooksAt } from './pass-through.js';

const { RowDescription, DataRow, CommandComplete, NoticeResponse, ReadyForQuery } = MessageType;
/** The transaction status byte of ReadyForQuery 'I' (idle). */
const IDLE = 0x49;

/**
 * Is `chunk[0, length)` whole messages, each a RowDescription, DataRow, NoticeResponse or a
 * CommandComplete the session does not look at (RESET and DISCARD ALL are its to see:
 * sessionLooksAt), then one ReadyForQuery 'I' at the very end? Anything else (a split message,
 * an error, a ParameterStatus, COPY ...) is the decoder's, as always.
 */
export function isPlainAnswer(chunk: Buffer, length: number): boolean {
  for (let i = 0; i + 5 <= length; ) {
    const type = chunk[i]!;
    const size = messageLength(chunk, i);
    const end = i + 1 + size;
    if (size < 4 || end > length) return false;
    switch (type) {
      case ReadyForQuery:
        return size === 5 && end === length && chunk[i + 5] === IDLE;
      case CommandComplete:
        if (size === 4 || sessionLooksAt(type, chunk, i)) return false;
        break;
      case RowDescription:
      case DataRow:
      case NoticeResponse:
        break;
      default:
        return false;
    }
    i = end;
  }
  return false;
}
