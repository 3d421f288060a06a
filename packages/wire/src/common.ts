/** Messages both sides send with the same format (COPY sub-protocol). */

/** CopyData ('d'): a chunk of COPY data stream. */
export interface CopyData {
  readonly type: 'CopyData';
  readonly data: Buffer;
}

/** CopyDone ('c'): end of the COPY data stream. */
export interface CopyDone {
  readonly type: 'CopyDone';
}

/** Format codes as sent on the wire (Int16): 0 text, 1 binary. */
export const FORMAT_TEXT = 0;
export const FORMAT_BINARY = 1;

/** Type bytes of every typed message, as named in the docs. */
export const MessageType = {
  // frontend
  Bind: 0x42, // 'B'
  Close: 0x43, // 'C'
  CopyFail: 0x66, // 'f'
  Describe: 0x44, // 'D'
  Execute: 0x45, // 'E'
  Flush: 0x48, // 'H'
  FunctionCall: 0x46, // 'F'
  Parse: 0x50, // 'P'
  AuthenticationResponse: 0x70, // 'p': GSSResponse, PasswordMessage, SASLInitialResponse, SASLResponse
  Query: 0x51, // 'Q'
  Sync: 0x53, // 'S'
  Terminate: 0x58, // 'X'
  // both
  CopyData: 0x64, // 'd'
  CopyDone: 0x63, // 'c'
  // backend
  Authentication: 0x52, // 'R'
  BackendKeyData: 0x4b, // 'K'
  BindComplete: 0x32, // '2'
  CloseComplete: 0x33, // '3'
  CommandComplete: 0x43, // 'C'
  CopyInResponse: 0x47, // 'G'
  CopyOutResponse: 0x48, // 'H'
  CopyBothResponse: 0x57, // 'W'
  DataRow: 0x44, // 'D'
  EmptyQueryResponse: 0x49, // 'I'
  ErrorResponse: 0x45, // 'E'
  FunctionCallResponse: 0x56, // 'V'
  NegotiateProtocolVersion: 0x76, // 'v'
  NoData: 0x6e, // 'n'
  NoticeResponse: 0x4e, // 'N'
  NotificationResponse: 0x41, // 'A'
  ParameterDescription: 0x74, // 't'
  ParameterStatus: 0x53, // 'S'
  ParseComplete: 0x31, // '1'
  PortalSuspended: 0x73, // 's'
  ReadyForQuery: 0x5a, // 'Z'
  RowDescription: 0x54, // 'T'
} as const;

/** Exhaustiveness check for switches over message unions. */
export function unreachable(x: never): never {
  throw new TypeError(`unhandled message ${JSON.stringify(x)}`);
}
