import type { CopyData, CopyDone } from '../common.js';

/**
 * Backend (server -> client) messages, named and shaped as in the Postgres docs'
 * "Message Formats". Byte fields are views into the decoded message (no copy).
 */

export interface AuthenticationOk {
  readonly type: 'AuthenticationOk';
}
export interface AuthenticationKerberosV5 {
  readonly type: 'AuthenticationKerberosV5';
}
export interface AuthenticationCleartextPassword {
  readonly type: 'AuthenticationCleartextPassword';
}
export interface AuthenticationMD5Password {
  readonly type: 'AuthenticationMD5Password';
  /** Exactly 4 bytes. */
  readonly salt: Buffer;
}
export interface AuthenticationGSS {
  readonly type: 'AuthenticationGSS';
}
export interface AuthenticationGSSContinue {
  readonly type: 'AuthenticationGSSContinue';
  readonly data: Buffer;
}
export interface AuthenticationSSPI {
  readonly type: 'AuthenticationSSPI';
}
export interface AuthenticationSASL {
  readonly type: 'AuthenticationSASL';
  /** In the server's order of preference; non-empty names. */
  readonly mechanisms: readonly string[];
}
export interface AuthenticationSASLContinue {
  readonly type: 'AuthenticationSASLContinue';
  readonly data: Buffer;
}
export interface AuthenticationSASLFinal {
  readonly type: 'AuthenticationSASLFinal';
  readonly data: Buffer;
}
export type Authentication =
  | AuthenticationOk
  | AuthenticationKerberosV5
  | AuthenticationCleartextPassword
  | AuthenticationMD5Password
  | AuthenticationGSS
  | AuthenticationGSSContinue
  | AuthenticationSSPI
  | AuthenticationSASL
  | AuthenticationSASLContinue
  | AuthenticationSASLFinal;

export interface BackendKeyData {
  readonly type: 'BackendKeyData';
  readonly processId: number;
  /** 4 bytes in protocol 3.0; 4..256 bytes in 3.2. */
  readonly secretKey: Buffer;
}
export interface BindComplete {
  readonly type: 'BindComplete';
}
export interface CloseComplete {
  readonly type: 'CloseComplete';
}
export interface CommandComplete {
  readonly type: 'CommandComplete';
  /** e.g. "SELECT 10", "INSERT 0 1". */
  readonly tag: string;
}
interface CopyResponseBody {
  /** Overall format (Int8): 0 textual, 1 binary. */
  readonly format: number;
  /** One Int16 format code per column. */
  readonly columnFormats: readonly number[];
}
export interface CopyInResponse extends CopyResponseBody {
  readonly type: 'CopyInResponse';
}
export interface CopyOutResponse extends CopyResponseBody {
  readonly type: 'CopyOutResponse';
}
export interface CopyBothResponse extends CopyResponseBody {
  readonly type: 'CopyBothResponse';
}
export interface DataRow {
  readonly type: 'DataRow';
  /** Column values as sent (text or binary); null is SQL NULL (length -1). */
  readonly values: readonly (Buffer | null)[];
}
export interface EmptyQueryResponse {
  readonly type: 'EmptyQueryResponse';
}
/**
 * Error and notice fields keyed by their one-character code ('S', 'V', 'C', 'M',
 * 'D', 'H', 'P', 'p', 'q', 'W', 's', 't', 'c', 'd', 'n', 'F', 'L', 'R');
 * unknown codes are kept as they came.
 */
export type NoticeFields = Readonly<Record<string, string>>;
export interface ErrorResponse {
  readonly type: 'ErrorResponse';
  readonly fields: NoticeFields;
}
export interface NoticeResponse {
  readonly type: 'NoticeResponse';
  readonly fields: NoticeFields;
}
export interface FunctionCallResponse {
  readonly type: 'FunctionCallResponse';
  /** null is SQL NULL (length -1). */
  readonly result: Buffer | null;
}
export interface NegotiateProtocolVersion {
  readonly type: 'NegotiateProtocolVersion';
  /**
   * The docs call it the newest minor version supported for the requested major;
   * servers send the whole version number ((major << 16) | minor, e.g. 196608 for
   * 3.0) and libpq reads it so. Kept as sent.
   */
  readonly newestProtocolVersion: number;
  /** Protocol options (`_pq_.*`) the server did not recognise. */
  readonly unrecognizedOptions: readonly string[];
}
export interface NoData {
  readonly type: 'NoData';
}
export interface NotificationResponse {
  readonly type: 'NotificationResponse';
  readonly processId: number;
  readonly channel: string;
  readonly payload: string;
}
export interface ParameterDescription {
  readonly type: 'ParameterDescription';
  /** Parameter type OIDs (unsigned). */
  readonly parameterTypes: readonly number[];
}
export interface ParameterStatus {
  readonly type: 'ParameterStatus';
  readonly name: string;
  readonly value: string;
}
export interface ParseComplete {
  readonly type: 'ParseComplete';
}
export interface PortalSuspended {
  readonly type: 'PortalSuspended';
}
/** 'I' idle, 'T' in a transaction block, 'E' in a failed transaction block. */
export type TransactionStatus = 'I' | 'T' | 'E';
export interface ReadyForQuery {
  readonly type: 'ReadyForQuery';
  readonly status: TransactionStatus;
}
export interface FieldDescription {
  readonly name: string;
  /** OID of the table, or 0. */
  readonly tableOid: number;
  /** Attribute number of the column, or 0. */
  readonly columnAttributeNumber: number;
  readonly dataTypeOid: number;
  /** pg_type.typlen: negative for variable-width types. */
  readonly dataTypeSize: number;
  /** pg_attribute.atttypmod. */
  readonly typeModifier: number;
  /** 0 text, 1 binary. */
  readonly format: number;
}
export interface RowDescription {
  readonly type: 'RowDescription';
  readonly fields: readonly FieldDescription[];
}

export type BackendMessage =
  | Authentication
  | BackendKeyData
  | BindComplete
  | CloseComplete
  | CommandComplete
  | CopyData
  | CopyDone
  | CopyInResponse
  | CopyOutResponse
  | CopyBothResponse
  | DataRow
  | EmptyQueryResponse
  | ErrorResponse
  | NoticeResponse
  | FunctionCallResponse
  | NegotiateProtocolVersion
  | NoData
  | NotificationResponse
  | ParameterDescription
  | ParameterStatus
  | ParseComplete
  | PortalSuspended
  | ReadyForQuery
  | RowDescription;
