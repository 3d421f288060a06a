import { Reader } from '../reader.js';
import { describeType } from '../frame.js';
import { ProtocolError } from '../errors.js';
import type {
  AuthenticationResponse,
  AuthenticationResponseKind,
  GSSResponse,
  PasswordMessage,
  SASLInitialResponse,
  SASLResponse,
  TypedFrontendMessage,
} from './messages.js';

const COPY_DONE = Object.freeze({ type: 'CopyDone' } as const);
const FLUSH = Object.freeze({ type: 'Flush' } as const);
const SYNC = Object.freeze({ type: 'Sync' } as const);
const TERMINATE = Object.freeze({ type: 'Terminate' } as const);

/**
 * Decode one typed frontend message body. `r` spans the body (after the 5-byte
 * header). 'p' messages are decoded as `authKind` says, or left generic
 * (AuthenticationResponse) when it is undefined.
 */
export function decodeFrontendBody(
  r: Reader,
  type: number,
  authKind: AuthenticationResponseKind | undefined,
): TypedFrontendMessage {
  switch (type) {
    case 0x42: {
      const portal = r.cstring('portal name');
      const statement = r.cstring('statement name');
      const parameterFormats = readInt16Array(r, 'parameter format');
      const at = r.pos;
      const n = r.count16('parameter count');
      checkFormatCount(r, parameterFormats.length, n, at);
      const parameters = new Array<Buffer | null>(n);
      for (let i = 0; i < n; i++) parameters[i] = r.nullableBytes('parameter value');
      const resultFormats = readInt16Array(r, 'result format');
      r.done('Bind');
      return { type: 'Bind', portal, statement, parameterFormats, parameters, resultFormats };
    }
    case 0x43: {
      const target = readTarget(r);
      const name = r.cstring('name');
      r.done('Close');
      return { type: 'Close', target, name };
    }
    case 0x64:
      return { type: 'CopyData', data: r.rest() };
    case 0x63:
      r.done('CopyDone');
      return COPY_DONE;
    case 0x66: {
      const message = r.cstring('error message');
      r.done('CopyFail');
      return { type: 'CopyFail', message };
    }
    case 0x44: {
      const target = readTarget(r);
      const name = r.cstring('name');
      r.done('Describe');
      return { type: 'Describe', target, name };
    }
    case 0x45: {
      const portal = r.cstring('portal name');
      const maxRows = r.int32('row limit');
      r.done('Execute');
      return { type: 'Execute', portal, maxRows };
    }
    case 0x48:
      r.done('Flush');
      return FLUSH;
    case 0x46: {
      const functionOid = r.uint32('function OID');
      const argumentFormats = readInt16Array(r, 'argument format');
      const at = r.pos;
      const n = r.count16('argument count');
      checkFormatCount(r, argumentFormats.length, n, at);
      const args = new Array<Buffer | null>(n);
      for (let i = 0; i < n; i++) args[i] = r.nullableBytes('argument value');
      const resultFormat = r.int16('result format');
      r.done('FunctionCall');
      return { type: 'FunctionCall', functionOid, argumentFormats, arguments: args, resultFormat };
    }
    case 0x50: {
      const name = r.cstring('statement name');
      const query = r.cstring('query string');
      const n = r.count16('parameter type count');
      const parameterTypes = new Array<number>(n);
      for (let i = 0; i < n; i++) parameterTypes[i] = r.uint32('parameter type OID');
      r.done('Parse');
      return { type: 'Parse', name, query, parameterTypes };
    }
    case 0x70:
      return authKind === undefined ? { type: 'AuthenticationResponse', data: r.rest() } : decodeAuthBody(r, authKind);
    case 0x51: {
      const query = r.cstring('query string');
      r.done('Query');
      return { type: 'Query', query };
    }
    case 0x53:
      r.done('Sync');
      return SYNC;
    case 0x58:
      r.done('Terminate');
      return TERMINATE;
    default:
      return r.fail(`unknown frontend message type ${describeType(type)}`, r.pos - 5);
  }
}

type AuthMessage = GSSResponse | PasswordMessage | SASLInitialResponse | SASLResponse;

function decodeAuthBody(r: Reader, kind: AuthenticationResponseKind): AuthMessage {
  switch (kind) {
    case 'GSSResponse':
      return { type: 'GSSResponse', data: r.rest() };
    case 'SASLResponse':
      return { type: 'SASLResponse', data: r.rest() };
    case 'PasswordMessage': {
      const password = r.cstring('password');
      r.done('PasswordMessage');
      return { type: 'PasswordMessage', password };
    }
    case 'SASLInitialResponse': {
      const mechanism = r.cstring('SASL mechanism');
      const data = r.nullableBytes('SASL initial response');
      r.done('SASLInitialResponse');
      return { type: 'SASLInitialResponse', mechanism, data };
    }
    default: {
      const never: never = kind;
      return r.fail(`unknown authentication response kind ${String(never)}`);
    }
  }
}

const authReader = new Reader();

/**
 * Interpret a generic 'p' message once the owner knows which exchange it belongs
 * to. `offset` is the stream offset of the message body (for error reports).
 */
export function decodeAuthenticationResponse(
  m: AuthenticationResponse,
  kind: AuthenticationResponseKind,
  offset = 0,
): AuthMessage {
  return decodeAuthBody(authReader.reset(m.data, 0, m.data.length, offset), kind);
}

function readTarget(r: Reader): 'S' | 'P' {
  const at = r.pos;
  const b = r.byte('target');
  if (b === 0x53) return 'S';
  if (b === 0x50) return 'P';
  return r.fail(`expected 'S' or 'P', got ${describeType(b)}`, at);
}

function readInt16Array(r: Reader, what: string): number[] {
  const n = r.count16(`${what} count`);
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) out[i] = r.int16(what);
  return out;
}

/** Format codes: none (all text), one (for all) or one per value. */
function checkFormatCount(r: Reader, formats: number, values: number, at: number): void {
  if (formats > 1 && formats !== values) r.fail(`${formats} format codes for ${values} values`, at);
}

const sharedReader = new Reader();

/** Decode one whole typed frontend message (header included). */
export function decodeFrontendMessage(
  bytes: Buffer,
  authKind?: AuthenticationResponseKind,
  offset = 0,
): TypedFrontendMessage {
  if (bytes.length < 5) throw new ProtocolError(`message of ${bytes.length} byte(s) is shorter than its header`, offset);
  const len = bytes.readInt32BE(1);
  if (len !== bytes.length - 1) throw new ProtocolError(`length field ${len} does not match ${bytes.length - 1}`, offset + 1);
  return decodeFrontendBody(sharedReader.reset(bytes, 5, bytes.length, offset + 5), bytes[0]!, authKind);
}
