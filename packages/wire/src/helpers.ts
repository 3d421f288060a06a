import { Writer } from './writer.js';
import type { RawMessage } from './frame.js';
import type { NoticeFields, TransactionStatus } from './backend/messages.js';

/** ErrorResponse/NoticeResponse field codes (docs: "Error and Notice Message Fields"). */
export const NoticeField = {
  Severity: 'S',
  SeverityNonLocalized: 'V',
  Code: 'C',
  Message: 'M',
  Detail: 'D',
  Hint: 'H',
  Position: 'P',
  InternalPosition: 'p',
  InternalQuery: 'q',
  Where: 'W',
  SchemaName: 's',
  TableName: 't',
  ColumnName: 'c',
  DataTypeName: 'd',
  ConstraintName: 'n',
  File: 'F',
  Line: 'L',
  Routine: 'R',
} as const;

export type Severity = 'ERROR' | 'FATAL' | 'PANIC' | 'WARNING' | 'NOTICE' | 'DEBUG' | 'INFO' | 'LOG';

function noticeBytes(type: number, severity: Severity, sqlstate: string, message: string, extra: NoticeFields): Buffer {
  const w = Writer.message(type, 64 + message.length)
    .byte(0x53).cstring(severity) // S
    .byte(0x56).cstring(severity) // V
    .byte(0x43).cstring(sqlstate) // C
    .byte(0x4d).cstring(message); // M
  for (const [code, value] of Object.entries(extra)) {
    if (code.length !== 1 || 'SVCM\0'.includes(code)) throw new RangeError(`invalid extra field code ${JSON.stringify(code)}`);
    w.byte(code.charCodeAt(0)).cstring(value);
  }
  return w.byte(0).finish();
}

/**
 * The bytes of an ErrorResponse as the pooler sends it:
 * `errorResponse('FATAL', SQLSTATE.TOO_MANY_CONNECTIONS, 'sorry, too many clients')`.
 * `extra` adds fields by code, e.g. `{ D: 'detail', H: 'hint' }`.
 */
export function errorResponse(severity: Severity, sqlstate: string, message: string, extra: NoticeFields = {}): Buffer {
  return noticeBytes(0x45, severity, sqlstate, message, extra);
}

/** The bytes of a NoticeResponse (same fields as `errorResponse`). */
export function noticeResponse(severity: Severity, sqlstate: string, message: string, extra: NoticeFields = {}): Buffer {
  return noticeBytes(0x4e, severity, sqlstate, message, extra);
}

/**
 * Transaction status of a raw ReadyForQuery without decoding it, or undefined if
 * the message is not a well-formed ReadyForQuery. Costs three byte reads.
 */
export function readyForQueryStatus(m: RawMessage | Buffer): TransactionStatus | undefined {
  const b = Buffer.isBuffer(m) ? m : m.bytes;
  if (b.length !== 6 || b[0] !== 0x5a || b.readInt32BE(1) !== 5) return undefined;
  const s = b[5];
  return s === 0x49 ? 'I' : s === 0x54 ? 'T' : s === 0x45 ? 'E' : undefined;
}

/**
 * The severity of a raw ErrorResponse or NoticeResponse without decoding it: the non-localized
 * field 'V' (servers since 9.6), else 'S' (localized, so only the English names are recognised).
 * Undefined when the message is not one of the two or has neither field.
 */
export function noticeSeverity(m: RawMessage | Buffer): string | undefined {
  const b = Buffer.isBuffer(m) ? m : m.bytes;
  if ((b[0] !== 0x45 && b[0] !== 0x4e) || b.length < 6) return undefined;
  let localized: string | undefined;
  for (let i = 5; i < b.length && b[i] !== 0; ) {
    const code = b[i]!;
    const end = b.indexOf(0, i + 1);
    if (end < 0) return undefined;
    if (code === 0x56) return b.toString('latin1', i + 1, end); // V
    if (code === 0x53) localized = b.toString('latin1', i + 1, end); // S
    i = end + 1;
  }
  return localized;
}

/** A raw ErrorResponse that ends the session (FATAL or PANIC): the server closes the connection after it. */
export function isSessionEndingError(m: RawMessage | Buffer): boolean {
  const severity = noticeSeverity(m);
  return (severity === 'FATAL' || severity === 'PANIC') && (Buffer.isBuffer(m) ? m[0] : m.bytes[0]) === 0x45;
}

/**
 * True if a connection's first bytes are a TLS handshake record rather than a
 * startup packet: PostgreSQL 17 clients with `sslnegotiation=direct` start TLS
 * without an SSLRequest. Check this before feeding a FrontendDecoder (which would
 * reject the record as an oversized startup packet). Needs the first 3 bytes.
 */
export function isDirectTlsHandshake(firstBytes: Buffer): boolean {
  return firstBytes.length >= 3 && firstBytes[0] === 0x16 && firstBytes[1] === 0x03 && firstBytes[2]! <= 0x04;
}
