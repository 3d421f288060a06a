/**
 * @quicpool/wire: PostgreSQL protocol 3.0/3.2 codec. Bytes in, messages out, and
 * back. No I/O: nothing here imports a socket or stream module.
 */
export { ProtocolError } from './errors.js';
export { SQLSTATE } from './sqlstate.js';
export type { SqlState } from './sqlstate.js';
export {
  Framer,
  DEFAULT_MAX_MESSAGE_SIZE,
  DEFAULT_MAX_STARTUP_PACKET_SIZE,
  SMALL_MESSAGE_LIMIT,
  messageLength,
} from './frame.js';
export type { RawMessage, DecoderLimits } from './frame.js';
/** `buf[start, end)` as a Buffer sharing its memory (subarray without its checks; for forwarding runs of framed messages). */
export { view as bufferView } from './reader.js';
export {
  PROTOCOL_3_0,
  PROTOCOL_3_2,
  CANCEL_REQUEST_CODE,
  SSL_REQUEST_CODE,
  GSSENC_REQUEST_CODE,
  MIN_CANCEL_KEY_LENGTH,
  MAX_CANCEL_KEY_LENGTH,
} from './startup-codes.js';
export { MessageType, FORMAT_TEXT, FORMAT_BINARY } from './common.js';
export type { CopyData, CopyDone } from './common.js';

export { FrontendDecoder, MAX_AUTH_MESSAGE_SIZE } from './frontend/decoder.js';
export type { FrontendDecoderOptions } from './frontend/decoder.js';
export { decodeFrontendMessage, decodeAuthenticationResponse } from './frontend/decode.js';
export { encodeFrontend } from './frontend/encode.js';
export { decodeStartupPacket, encodeStartupPacket } from './startup.js';
export type * from './frontend/messages.js';

export { BackendDecoder } from './backend/decoder.js';
export { decodeBackendMessage } from './backend/decode.js';
export { encodeBackend } from './backend/encode.js';
export type * from './backend/messages.js';

export { errorResponse, noticeResponse, noticeSeverity, isSessionEndingError, readyForQueryStatus, isDirectTlsHandshake, NoticeField } from './helpers.js';
export type { Severity } from './helpers.js';

export {
  SCRAM_SHA_256,
  ScramError,
  saltedPassword,
  scramClientFirst,
  parseScramServerFirst,
  scramClientFinal,
  verifyScramServerFinal,
  parseScramSecret,
  makeScramSecret,
  scramServerFirst,
  verifyScramClientFinal,
} from './scram.js';
export type { ScramClientFirst, ScramServerFirst, ScramClientFinal, ScramSecret, ScramServerState } from './scram.js';
