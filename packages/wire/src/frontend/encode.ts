import { serialize } from 'pg-protocol';
import { Writer } from '../writer.js';
import { encodeStartupPacket } from '../startup.js';
import { unreachable } from '../common.js';
import type { FrontendMessage, TypedFrontendMessage } from './messages.js';

/**
 * Encode a frontend message to its exact wire bytes.
 *
 * Where pg-protocol's `serialize` (node-postgres's own encoder) writes exactly
 * what the typed message says, it is used; the rest (per-parameter format codes
 * in Bind, FunctionCall, 3.2 startup/cancel packets, binary SASL data, ...) is ours.
 * Returned buffers may be shared constants: treat them as read-only.
 * Throws RangeError for values the wire cannot carry (NUL in a string, out-of-range integers).
 */
export function encodeFrontend(m: FrontendMessage): Buffer {
  switch (m.type) {
    case 'StartupMessage':
    case 'SSLRequest':
    case 'GSSENCRequest':
    case 'CancelRequest':
      return encodeStartupPacket(m);
    default:
      return encodeTyped(m);
  }
}

function encodeTyped(m: TypedFrontendMessage): Buffer {
  switch (m.type) {
    case 'Query':
      return serialize.query(cstr(m.query));
    case 'Sync':
      return serialize.sync();
    case 'Flush':
      return serialize.flush();
    case 'Terminate':
      return serialize.end();
    case 'CopyDone':
      return serialize.copyDone();
    case 'CopyData':
      return serialize.copyData(m.data);
    case 'CopyFail':
      return serialize.copyFail(cstr(m.message));
    case 'PasswordMessage':
      return serialize.password(cstr(m.password));
    case 'Describe':
      return serialize.describe({ type: m.target, name: cstr(m.name) });
    case 'Close':
      return serialize.close({ type: m.target, name: cstr(m.name) });
    case 'Execute':
      // pg-protocol writes the row limit unsigned; the field is an Int32.
      if (m.maxRows >= 0 && m.maxRows <= 0x7fffffff && Number.isInteger(m.maxRows)) {
        return serialize.execute({ portal: cstr(m.portal), rows: m.maxRows });
      }
      return Writer.message(0x45).cstring(m.portal).int32(m.maxRows).finish();
    case 'Parse':
      // pg-protocol warns on console for names over 63 characters; encode those ourselves.
      if (m.name.length <= 63) {
        for (const t of m.parameterTypes) uint32(t);
        if (m.parameterTypes.length > 0x7fff) throw new RangeError('too many parameter types');
        return serialize.parse({ name: cstr(m.name), text: cstr(m.query), types: [...m.parameterTypes] });
      } else {
        const w = Writer.message(0x50).cstring(m.name).cstring(m.query);
        w.count16(m.parameterTypes.length, 'parameter types');
        for (const t of m.parameterTypes) w.uint32(t);
        return w.finish();
      }
    case 'Bind': {
      // pg-protocol derives format codes from value types; ours are explicit.
      checkFormats(m.parameterFormats.length, m.parameters.length);
      let size = 32 + Buffer.byteLength(m.portal) + Buffer.byteLength(m.statement);
      for (const p of m.parameters) size += 6 + (p === null ? 0 : p.length);
      const w = Writer.message(0x42, size).cstring(m.portal).cstring(m.statement);
      w.count16(m.parameterFormats.length, 'parameter formats');
      for (const f of m.parameterFormats) w.int16(f);
      w.count16(m.parameters.length, 'parameters');
      for (const p of m.parameters) w.nullableBytes(p);
      w.count16(m.resultFormats.length, 'result formats');
      for (const f of m.resultFormats) w.int16(f);
      return w.finish();
    }
    case 'FunctionCall': {
      checkFormats(m.argumentFormats.length, m.arguments.length);
      const w = Writer.message(0x46).uint32(m.functionOid);
      w.count16(m.argumentFormats.length, 'argument formats');
      for (const f of m.argumentFormats) w.int16(f);
      w.count16(m.arguments.length, 'arguments');
      for (const a of m.arguments) w.nullableBytes(a);
      return w.int16(m.resultFormat).finish();
    }
    case 'SASLInitialResponse':
      // pg-protocol's variant takes a string; SASL data is bytes and may be absent (-1).
      return Writer.message(0x70).cstring(m.mechanism).nullableBytes(m.data).finish();
    case 'SASLResponse':
    case 'GSSResponse':
    case 'AuthenticationResponse':
      return Writer.message(0x70, 5 + m.data.length).bytes(m.data).finish();
    default:
      return unreachable(m);
  }
}

function cstr(s: string): string {
  if (s.includes('\0')) throw new RangeError('a protocol String cannot contain NUL');
  return s;
}

function uint32(n: number): void {
  if (!Number.isInteger(n) || n < 0 || n > 0xffffffff) throw new RangeError(`OID out of range: ${n}`);
}

function checkFormats(formats: number, values: number): void {
  if (formats > 1 && formats !== values) throw new RangeError(`${formats} format codes for ${values} values`);
}
