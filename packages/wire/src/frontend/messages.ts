import type { CopyData, CopyDone } from '../common.js';

/**
 * Frontend (client -> server) messages, named and shaped as in the Postgres docs'
 * "Message Formats". Byte fields are views into the decoded message (no copy).
 */

/** Startup-phase packets: no type byte, sent before (or instead of) a session. */
export interface StartupMessage {
  readonly type: 'StartupMessage';
  /** Int32 version: (major << 16) | minor, e.g. 196608 (3.0) or 196610 (3.2). */
  readonly protocolVersion: number;
  /** name/value pairs (user, database, options, `_pq_.*` ...), null-prototype object. */
  readonly parameters: Readonly<Record<string, string>>;
}
export interface SSLRequest {
  readonly type: 'SSLRequest';
}
export interface GSSENCRequest {
  readonly type: 'GSSENCRequest';
}
export interface CancelRequest {
  readonly type: 'CancelRequest';
  readonly processId: number;
  /** 4 bytes in protocol 3.0; 4..256 bytes in 3.2. */
  readonly secretKey: Buffer;
}
export type StartupPacket = StartupMessage | SSLRequest | GSSENCRequest | CancelRequest;

export interface Bind {
  readonly type: 'Bind';
  readonly portal: string;
  readonly statement: string;
  /** Zero (all text), one (applies to all) or one per parameter. */
  readonly parameterFormats: readonly number[];
  /** null is SQL NULL (length -1). */
  readonly parameters: readonly (Buffer | null)[];
  readonly resultFormats: readonly number[];
}
export interface Close {
  readonly type: 'Close';
  /** 'S' prepared statement, 'P' portal. */
  readonly target: 'S' | 'P';
  readonly name: string;
}
export interface CopyFail {
  readonly type: 'CopyFail';
  readonly message: string;
}
export interface Describe {
  readonly type: 'Describe';
  readonly target: 'S' | 'P';
  readonly name: string;
}
export interface Execute {
  readonly type: 'Execute';
  readonly portal: string;
  /** 0 means no limit. */
  readonly maxRows: number;
}
export interface Flush {
  readonly type: 'Flush';
}
export interface FunctionCall {
  readonly type: 'FunctionCall';
  readonly functionOid: number;
  readonly argumentFormats: readonly number[];
  readonly arguments: readonly (Buffer | null)[];
  readonly resultFormat: number;
}
export interface GSSResponse {
  readonly type: 'GSSResponse';
  readonly data: Buffer;
}
export interface Parse {
  readonly type: 'Parse';
  readonly name: string;
  readonly query: string;
  /** Parameter type OIDs (unsigned); 0 leaves the type unspecified. */
  readonly parameterTypes: readonly number[];
}
export interface PasswordMessage {
  readonly type: 'PasswordMessage';
  readonly password: string;
}
export interface SASLInitialResponse {
  readonly type: 'SASLInitialResponse';
  readonly mechanism: string;
  /** null when the mechanism sends no initial response (length -1). */
  readonly data: Buffer | null;
}
export interface SASLResponse {
  readonly type: 'SASLResponse';
  readonly data: Buffer;
}
/**
 * A 'p' message decoded without knowing which authentication exchange is in
 * progress: the body, uninterpreted. See `decodeAuthenticationResponse`.
 */
export interface AuthenticationResponse {
  readonly type: 'AuthenticationResponse';
  readonly data: Buffer;
}
export interface Query {
  readonly type: 'Query';
  readonly query: string;
}
export interface Sync {
  readonly type: 'Sync';
}
export interface Terminate {
  readonly type: 'Terminate';
}

/** The four meanings of a 'p' message; the owner knows which auth it requested. */
export type AuthenticationResponseKind = 'GSSResponse' | 'PasswordMessage' | 'SASLInitialResponse' | 'SASLResponse';

export type TypedFrontendMessage =
  | Bind
  | Close
  | CopyData
  | CopyDone
  | CopyFail
  | Describe
  | Execute
  | Flush
  | FunctionCall
  | GSSResponse
  | Parse
  | PasswordMessage
  | SASLInitialResponse
  | SASLResponse
  | AuthenticationResponse
  | Query
  | Sync
  | Terminate;

export type FrontendMessage = StartupPacket | TypedFrontendMessage;
