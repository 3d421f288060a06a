// Backend messages a session always looks at itself, whatever its state: everything else may
// pass to the client without an event when the session has nothing else to do with it
// (SessionMachine.passesThrough, and the statement router's own test after this one; the plain
// lane's answer check, plain-answer.ts).
import { MessageType } from '@quicpool/wire';

/** The message at `buffer[start, ...)` needs the session (no pass-through). */
export function sessionLooksAt(type: number, buffer: Buffer, start: number): boolean {
  switch (type) {
    case MessageType.ErrorResponse:
    case MessageType.ParameterStatus:
    case MessageType.ReadyForQuery:
    case MessageType.CopyInResponse: // the Syncs it makes the backend ignore: see SessionMachine.onBackendMessage
      return true;
    case MessageType.CommandComplete: {
      const tag = buffer[start + 5]; // RESET ALL and DISCARD ALL: see SessionMachine.deliver
      return tag === 0x52 || tag === 0x44;
    }
    default:
      return false;
  }
}
