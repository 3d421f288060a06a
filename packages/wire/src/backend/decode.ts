import { Reader } from '../reader.js';
import { describeType } from '../frame.js';
import { ProtocolError } from '../errors.js';
import { MAX_CANCEL_KEY_LENGTH, MIN_CANCEL_KEY_LENGTH } from '../startup-codes.js';
import type {
  Authentication,
  BackendMessage,
  CopyBothResponse,
  CopyInResponse,
  CopyOutResponse,
  FieldDescription,
  NoticeFields,
} from './messages.js';

// Bodiless messages are shared frozen singletons: decoding them allocates nothing.
const BIND_COMPLETE = Object.freeze({ type: 'BindComplete' } as const);
const CLOSE_COMPLETE = Object.freeze({ type: 'CloseComplete' } as const);
const COPY_DONE = Object.freeze({ type: 'CopyDone' } as const);
const EMPTY_QUERY_RESPONSE = Object.freeze({ type: 'EmptyQueryResponse' } as const);
const NO_DATA = Object.freeze({ type: 'NoData' } as const);
const PARSE_COMPLETE = Object.freeze({ type: 'ParseComplete' } as const);
const PORTAL_SUSPENDED = Object.freeze({ type: 'PortalSuspended' } as const);
const RFQ_IDLE = Object.freeze({ type: 'ReadyForQuery', status: 'I' } as const);
const RFQ_TRANSACTION = Object.freeze({ type: 'ReadyForQuery', status: 'T' } as const);
const RFQ_FAILED = Object.freeze({ type: 'ReadyForQuery', status: 'E' } as const);

/**
 * Decode one backend message body. `r` spans the body (after the 5-byte header);
 * every field must parse and the body must be consumed exactly.
 */
export function decodeBackendBody(r: Reader, type: number): BackendMessage {
  switch (type) {
    case 0x44: {
      // DataRow: the hot one, kept first.
      const n = r.count16('column count');
      const values = new Array<Buffer | null>(n);
      for (let i = 0; i < n; i++) values[i] = r.nullableBytes('column value');
      r.done('DataRow');
      return { type: 'DataRow', values };
    }
    case 0x43: {
      const tag = r.cstring('command tag');
      r.done('CommandComplete');
      return { type: 'CommandComplete', tag };
    }
    case 0x5a: {
      const at = r.pos;
      const s = r.byte('transaction status');
      r.done('ReadyForQuery');
      if (s === 0x49) return RFQ_IDLE;
      if (s === 0x54) return RFQ_TRANSACTION;
      if (s === 0x45) return RFQ_FAILED;
      return r.fail(`invalid transaction status ${describeType(s)}`, at);
    }
    case 0x54: {
      const n = r.count16('field count');
      const fields = new Array<FieldDescription>(n);
      for (let i = 0; i < n; i++) {
        fields[i] = {
          name: r.cstring('field name'),
          tableOid: r.uint32('table OID'),
          columnAttributeNumber: r.int16('column attribute number'),
          dataTypeOid: r.uint32('data type OID'),
          dataTypeSize: r.int16('data type size'),
          typeModifier: r.int32('type modifier'),
          format: r.int16('format code'),
        };
      }
      r.done('RowDescription');
      return { type: 'RowDescription', fields };
    }
    case 0x52:
      return decodeAuthentication(r);
    case 0x4b: {
      const processId = r.int32('process ID');
      const at = r.pos;
      const secretKey = r.rest();
      if (secretKey.length < MIN_CANCEL_KEY_LENGTH || secretKey.length > MAX_CANCEL_KEY_LENGTH) {
        r.fail(`invalid secret key length ${secretKey.length}`, at);
      }
      return { type: 'BackendKeyData', processId, secretKey };
    }
    case 0x32:
      r.done('BindComplete');
      return BIND_COMPLETE;
    case 0x33:
      r.done('CloseComplete');
      return CLOSE_COMPLETE;
    case 0x64:
      return { type: 'CopyData', data: r.rest() };
    case 0x63:
      r.done('CopyDone');
      return COPY_DONE;
    case 0x47:
      return decodeCopyResponse(r, 'CopyInResponse');
    case 0x48:
      return decodeCopyResponse(r, 'CopyOutResponse');
    case 0x57:
      return decodeCopyResponse(r, 'CopyBothResponse');
    case 0x49:
      r.done('EmptyQueryResponse');
      return EMPTY_QUERY_RESPONSE;
    case 0x45:
      return { type: 'ErrorResponse', fields: decodeNoticeFields(r) };
    case 0x4e:
      return { type: 'NoticeResponse', fields: decodeNoticeFields(r) };
    case 0x56: {
      const result = r.nullableBytes('result');
      r.done('FunctionCallResponse');
      return { type: 'FunctionCallResponse', result };
    }
    case 0x76: {
      const newestProtocolVersion = r.int32('newest protocol version');
      const at = r.pos;
      const n = r.int32('option count');
      if (n < 0) r.fail(`negative option count ${n}`, at);
      const unrecognizedOptions: string[] = [];
      for (let i = 0; i < n; i++) unrecognizedOptions.push(r.cstring('option name'));
      r.done('NegotiateProtocolVersion');
      return { type: 'NegotiateProtocolVersion', newestProtocolVersion, unrecognizedOptions };
    }
    case 0x6e:
      r.done('NoData');
      return NO_DATA;
    case 0x41: {
      const processId = r.int32('process ID');
      const channel = r.cstring('channel');
      const payload = r.cstring('payload');
      r.done('NotificationResponse');
      return { type: 'NotificationResponse', processId, channel, payload };
    }
    case 0x74: {
      const n = r.count16('parameter count');
      const parameterTypes = new Array<number>(n);
      for (let i = 0; i < n; i++) parameterTypes[i] = r.uint32('parameter type OID');
      r.done('ParameterDescription');
      return { type: 'ParameterDescription', parameterTypes };
    }
    case 0x53: {
      const name = r.cstring('parameter name');
      const value = r.cstring('parameter value');
      r.done('ParameterStatus');
      return { type: 'ParameterStatus', name, value };
    }
    case 0x31:
      r.done('ParseComplete');
      return PARSE_COMPLETE;
    case 0x73:
      r.done('PortalSuspended');
      return PORTAL_SUSPENDED;
    default:
      return r.fail(`unknown backend message type ${describeType(type)}`, r.pos - 5);
  }
}

function decodeAuthentication(r: Reader): Authentication {
  const at = r.pos;
  const code = r.int32('authentication code');
  switch (code) {
    case 0:
      r.done('AuthenticationOk');
      return { type: 'AuthenticationOk' };
    case 2:
      r.done('AuthenticationKerberosV5');
      return { type: 'AuthenticationKerberosV5' };
    case 3:
      r.done('AuthenticationCleartextPassword');
      return { type: 'AuthenticationCleartextPassword' };
    case 5: {
      const salt = r.bytes(4, 'salt');
      r.done('AuthenticationMD5Password');
      return { type: 'AuthenticationMD5Password', salt };
    }
    case 7:
      r.done('AuthenticationGSS');
      return { type: 'AuthenticationGSS' };
    case 8:
      return { type: 'AuthenticationGSSContinue', data: r.rest() };
    case 9:
      r.done('AuthenticationSSPI');
      return { type: 'AuthenticationSSPI' };
    case 10: {
      const mechanisms: string[] = [];
      for (;;) {
        const m = r.cstring('SASL mechanism');
        if (m === '') break;
        mechanisms.push(m);
      }
      r.done('AuthenticationSASL');
      return { type: 'AuthenticationSASL', mechanisms };
    }
    case 11:
      return { type: 'AuthenticationSASLContinue', data: r.rest() };
    case 12:
      return { type: 'AuthenticationSASLFinal', data: r.rest() };
    default:
      return r.fail(`unknown authentication request code ${code}`, at);
  }
}

type CopyResponse = CopyInResponse | CopyOutResponse | CopyBothResponse;

function decodeCopyResponse<T extends CopyResponse['type']>(r: Reader, type: T): CopyResponse & { type: T } {
  const at = r.pos;
  const format = r.byte('copy format');
  if (format > 1) r.fail(`invalid copy format ${format}`, at);
  const n = r.count16('column count');
  const columnFormats = new Array<number>(n);
  for (let i = 0; i < n; i++) columnFormats[i] = r.int16('column format');
  r.done(type);
  return { type, format, columnFormats } as CopyResponse & { type: T };
}

function decodeNoticeFields(r: Reader): NoticeFields {
  const fields: Record<string, string> = {};
  for (;;) {
    const code = r.byte('field type');
    if (code === 0) break;
    fields[String.fromCharCode(code)] = r.cstring('field value');
  }
  r.done('ErrorResponse/NoticeResponse');
  return fields;
}

const sharedReader = new Reader();

/**
 * Decode one whole backend message (header included), e.g. a RawMessage's bytes.
 * `offset` is its stream position, used in ProtocolError offsets.
 */
export function decodeBackendMessage(bytes: Buffer, offset = 0): BackendMessage {
  if (bytes.length < 5) throw new ProtocolError(`message of ${bytes.length} byte(s) is shorter than its header`, offset);
  const len = bytes.readInt32BE(1);
  if (len !== bytes.length - 1) throw new ProtocolError(`length field ${len} does not match ${bytes.length - 1}`, offset + 1);
  return decodeBackendBody(sharedReader.reset(bytes, 5, bytes.length, offset + 5), bytes[0]!);
}
