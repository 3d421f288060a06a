import { Writer } from '../writer.js';
import { unreachable } from '../common.js';
import { MAX_CANCEL_KEY_LENGTH, MIN_CANCEL_KEY_LENGTH } from '../startup-codes.js';
import type { Authentication, BackendMessage, NoticeFields } from './messages.js';

/** A bodiless message: Byte1 type, Int32(4). */
function empty(type: number): Buffer {
  const b = Buffer.allocUnsafe(5);
  b[0] = type;
  b.writeInt32BE(4, 1);
  return b;
}

/**
 * Encode a backend message to its exact wire bytes (pg-protocol has no backend
 * serializer, so all of these are ours). Throws RangeError for values the wire
 * cannot carry.
 */
export function encodeBackend(m: BackendMessage): Buffer {
  switch (m.type) {
    case 'DataRow': {
      let size = 7;
      for (const v of m.values) size += 4 + (v === null ? 0 : v.length);
      const w = Writer.message(0x44, size).count16(m.values.length, 'columns');
      for (const v of m.values) w.nullableBytes(v);
      return w.finish();
    }
    case 'CommandComplete':
      return Writer.message(0x43).cstring(m.tag).finish();
    case 'ReadyForQuery':
      return Writer.message(0x5a).byte(m.status.charCodeAt(0)).finish();
    case 'RowDescription': {
      const w = Writer.message(0x54, 7 + m.fields.length * 32).count16(m.fields.length, 'fields');
      for (const f of m.fields) {
        w.cstring(f.name)
          .uint32(f.tableOid)
          .int16(f.columnAttributeNumber)
          .uint32(f.dataTypeOid)
          .int16(f.dataTypeSize)
          .int32(f.typeModifier)
          .int16(f.format);
      }
      return w.finish();
    }
    case 'AuthenticationOk':
    case 'AuthenticationKerberosV5':
    case 'AuthenticationCleartextPassword':
    case 'AuthenticationMD5Password':
    case 'AuthenticationGSS':
    case 'AuthenticationGSSContinue':
    case 'AuthenticationSSPI':
    case 'AuthenticationSASL':
    case 'AuthenticationSASLContinue':
    case 'AuthenticationSASLFinal':
      return encodeAuthentication(m);
    case 'BackendKeyData': {
      const n = m.secretKey.length;
      if (n < MIN_CANCEL_KEY_LENGTH || n > MAX_CANCEL_KEY_LENGTH) throw new RangeError(`secret key of ${n} bytes`);
      return Writer.message(0x4b).int32(m.processId).bytes(m.secretKey).finish();
    }
    case 'BindComplete':
      return empty(0x32);
    case 'CloseComplete':
      return empty(0x33);
    case 'CopyData':
      return Writer.message(0x64, 5 + m.data.length).bytes(m.data).finish();
    case 'CopyDone':
      return empty(0x63);
    case 'CopyInResponse':
    case 'CopyOutResponse':
    case 'CopyBothResponse': {
      const type = m.type === 'CopyInResponse' ? 0x47 : m.type === 'CopyOutResponse' ? 0x48 : 0x57;
      const w = Writer.message(type).byte(m.format).count16(m.columnFormats.length, 'columns');
      for (const f of m.columnFormats) w.int16(f);
      return w.finish();
    }
    case 'EmptyQueryResponse':
      return empty(0x49);
    case 'ErrorResponse':
      return encodeNoticeFields(0x45, m.fields);
    case 'NoticeResponse':
      return encodeNoticeFields(0x4e, m.fields);
    case 'FunctionCallResponse':
      return Writer.message(0x56).nullableBytes(m.result).finish();
    case 'NegotiateProtocolVersion': {
      const w = Writer.message(0x76).int32(m.newestProtocolVersion).int32(m.unrecognizedOptions.length);
      for (const o of m.unrecognizedOptions) w.cstring(o);
      return w.finish();
    }
    case 'NoData':
      return empty(0x6e);
    case 'NotificationResponse':
      return Writer.message(0x41).int32(m.processId).cstring(m.channel).cstring(m.payload).finish();
    case 'ParameterDescription': {
      const w = Writer.message(0x74).count16(m.parameterTypes.length, 'parameters');
      for (const t of m.parameterTypes) w.uint32(t);
      return w.finish();
    }
    case 'ParameterStatus':
      return Writer.message(0x53).cstring(m.name).cstring(m.value).finish();
    case 'ParseComplete':
      return empty(0x31);
    case 'PortalSuspended':
      return empty(0x73);
    default:
      return unreachable(m);
  }
}

function encodeAuthentication(m: Authentication): Buffer {
  const w = Writer.message(0x52);
  switch (m.type) {
    case 'AuthenticationOk':
      return w.int32(0).finish();
    case 'AuthenticationKerberosV5':
      return w.int32(2).finish();
    case 'AuthenticationCleartextPassword':
      return w.int32(3).finish();
    case 'AuthenticationMD5Password':
      if (m.salt.length !== 4) throw new RangeError('MD5 salt must be 4 bytes');
      return w.int32(5).bytes(m.salt).finish();
    case 'AuthenticationGSS':
      return w.int32(7).finish();
    case 'AuthenticationGSSContinue':
      return w.int32(8).bytes(m.data).finish();
    case 'AuthenticationSSPI':
      return w.int32(9).finish();
    case 'AuthenticationSASL':
      w.int32(10);
      for (const mech of m.mechanisms) {
        if (mech === '') throw new RangeError('empty SASL mechanism name');
        w.cstring(mech);
      }
      return w.byte(0).finish();
    case 'AuthenticationSASLContinue':
      return w.int32(11).bytes(m.data).finish();
    case 'AuthenticationSASLFinal':
      return w.int32(12).bytes(m.data).finish();
    default:
      return unreachable(m);
  }
}

function encodeNoticeFields(type: number, fields: NoticeFields): Buffer {
  const w = Writer.message(type, 128);
  for (const [code, value] of Object.entries(fields)) {
    if (code.length !== 1 || code === '\0') throw new RangeError(`invalid notice field code ${JSON.stringify(code)}`);
    w.byte(code.charCodeAt(0)).cstring(value);
  }
  return w.byte(0).finish();
}
