import { ProtocolError } from './errors.js';
import { Reader } from './reader.js';
import { Writer } from './writer.js';
import {
  CANCEL_REQUEST_CODE,
  GSSENC_REQUEST_CODE,
  MAX_CANCEL_KEY_LENGTH,
  MIN_CANCEL_KEY_LENGTH,
  SSL_REQUEST_CODE,
} from './startup-codes.js';
import type { StartupPacket } from './frontend/messages.js';

const SSL_REQUEST = Object.freeze({ type: 'SSLRequest' } as const);
const GSSENC_REQUEST = Object.freeze({ type: 'GSSENCRequest' } as const);

/**
 * Decode a startup-phase packet body. `r` spans the whole packet (Int32 length
 * first). Accepts protocol major version 3 with any minor version so that the
 * owner can answer an unsupported minor with NegotiateProtocolVersion.
 */
export function decodeStartupBody(r: Reader): StartupPacket {
  r.int32('length');
  const at = r.pos;
  const code = r.int32('protocol version');
  switch (code) {
    case SSL_REQUEST_CODE:
      r.done('SSLRequest');
      return SSL_REQUEST;
    case GSSENC_REQUEST_CODE:
      r.done('GSSENCRequest');
      return GSSENC_REQUEST;
    case CANCEL_REQUEST_CODE: {
      const processId = r.int32('process ID');
      const keyAt = r.pos;
      const secretKey = r.rest();
      if (secretKey.length < MIN_CANCEL_KEY_LENGTH || secretKey.length > MAX_CANCEL_KEY_LENGTH) {
        r.fail(`invalid cancel key length ${secretKey.length}`, keyAt);
      }
      return { type: 'CancelRequest', processId, secretKey };
    }
    default: {
      if (code >>> 16 !== 3) r.fail(`unsupported frontend protocol ${code >>> 16}.${code & 0xffff}`, at);
      // Null prototype: a parameter named "__proto__" is just a parameter.
      const parameters: Record<string, string> = Object.create(null) as Record<string, string>;
      for (;;) {
        const name = r.cstring('parameter name');
        if (name === '') break;
        parameters[name] = r.cstring('parameter value');
      }
      r.done('StartupMessage');
      return { type: 'StartupMessage', protocolVersion: code, parameters };
    }
  }
}

const sharedReader = new Reader();

/** Decode one whole startup-phase packet (e.g. a RawMessage with type 0). */
export function decodeStartupPacket(bytes: Buffer, offset = 0): StartupPacket {
  if (bytes.length < 8) throw new ProtocolError(`startup packet of ${bytes.length} byte(s) is too short`, offset);
  const len = bytes.readInt32BE(0);
  if (len !== bytes.length) throw new ProtocolError(`length field ${len} does not match ${bytes.length}`, offset);
  return decodeStartupBody(sharedReader.reset(bytes, 0, bytes.length, offset));
}

/** Encode a startup-phase packet. */
export function encodeStartupPacket(m: StartupPacket): Buffer {
  switch (m.type) {
    case 'SSLRequest':
      return Writer.startup(8).int32(SSL_REQUEST_CODE).finish();
    case 'GSSENCRequest':
      return Writer.startup(8).int32(GSSENC_REQUEST_CODE).finish();
    case 'CancelRequest': {
      const n = m.secretKey.length;
      if (n < MIN_CANCEL_KEY_LENGTH || n > MAX_CANCEL_KEY_LENGTH) throw new RangeError(`cancel key of ${n} bytes`);
      return Writer.startup(12 + n).int32(CANCEL_REQUEST_CODE).int32(m.processId).bytes(m.secretKey).finish();
    }
    case 'StartupMessage': {
      if (m.protocolVersion >>> 16 !== 3) throw new RangeError(`protocol version ${m.protocolVersion} is not 3.x`);
      const w = Writer.startup(256).int32(m.protocolVersion);
      for (const name of Object.keys(m.parameters)) {
        if (name === '') throw new RangeError('empty startup parameter name');
        w.cstring(name).cstring(m.parameters[name]!);
      }
      return w.byte(0).finish();
    }
    default: {
      const never: never = m;
      throw new TypeError(`unhandled startup packet ${JSON.stringify(never)}`);
    }
  }
}
