// fast-check generators for every message type, both directions.
import fc from 'fast-check';
import type { Arbitrary } from 'fast-check';
import type {
  AuthenticationResponseKind,
  BackendMessage,
  FrontendMessage,
  StartupPacket,
  TypedFrontendMessage,
} from '../src/index.js';

/** A protocol String: any valid Unicode without NUL. */
export const str = (maxLength = 24): Arbitrary<string> =>
  fc.string({ unit: 'grapheme', maxLength }).map((s) => s.replace(/\0/g, ''));
export const nonEmptyStr = (maxLength = 16): Arbitrary<string> =>
  str(maxLength).filter((s) => s.length > 0);
export const bytes = (maxLength = 48, minLength = 0): Arbitrary<Buffer> =>
  fc.uint8Array({ minLength, maxLength }).map((a) => Buffer.from(a));
export const nullableBytes = fc.option(bytes(), { nil: null, freq: 4 });
export const int16 = fc.integer({ min: -0x8000, max: 0x7fff });
export const int32 = fc.integer({ min: -0x80000000, max: 0x7fffffff });
export const uint32 = fc.integer({ min: 0, max: 0xffffffff });
export const format = fc.constantFrom(0, 1);
const target = fc.constantFrom<'S' | 'P'>('S', 'P');

/** Values plus format codes that are none, one, or one per value (as Postgres requires). */
const valuesWithFormats = fc
  .array(nullableBytes, { maxLength: 6 })
  .chain((values) =>
    fc.oneof(
      fc.constant<number[]>([]),
      fc.array(int16, { minLength: 1, maxLength: 1 }),
      fc.array(int16, { minLength: values.length, maxLength: values.length }),
    ).map((formats) => ({ values, formats })),
  );

const params = fc.dictionary(nonEmptyStr(), str(), { maxKeys: 6 }).map((d) => {
  const o = Object.create(null) as Record<string, string>;
  for (const [k, v] of Object.entries(d)) o[k] = v;
  return o;
});

export const startupPacket: Arbitrary<StartupPacket> = fc.oneof(
  fc.record({
    type: fc.constant('StartupMessage' as const),
    protocolVersion: fc.oneof(fc.constantFrom(196608, 196610), fc.integer({ min: 0, max: 0xffff }).map((m) => 196608 + m)),
    parameters: params,
  }),
  fc.constant({ type: 'SSLRequest' as const }),
  fc.constant({ type: 'GSSENCRequest' as const }),
  fc.record({
    type: fc.constant('CancelRequest' as const),
    processId: int32,
    secretKey: fc.oneof(bytes(4, 4), bytes(256, 4)),
  }),
);

/** Typed frontend messages except the four 'p' kinds that need a hint. */
export const typedFrontend: Arbitrary<TypedFrontendMessage> = fc.oneof(
  valuesWithFormats.chain(({ values, formats }) =>
    fc.record({
      type: fc.constant('Bind' as const),
      portal: str(),
      statement: str(),
      parameterFormats: fc.constant(formats),
      parameters: fc.constant(values),
      resultFormats: fc.array(int16, { maxLength: 4 }),
    }),
  ),
  fc.record({ type: fc.constant('Close' as const), target, name: str() }),
  fc.record({ type: fc.constant('CopyData' as const), data: bytes() }),
  fc.constant({ type: 'CopyDone' as const }),
  fc.record({ type: fc.constant('CopyFail' as const), message: str() }),
  fc.record({ type: fc.constant('Describe' as const), target, name: str() }),
  fc.record({ type: fc.constant('Execute' as const), portal: str(), maxRows: int32 }),
  fc.constant({ type: 'Flush' as const }),
  valuesWithFormats.chain(({ values, formats }) =>
    fc.record({
      type: fc.constant('FunctionCall' as const),
      functionOid: uint32,
      argumentFormats: fc.constant(formats),
      arguments: fc.constant(values),
      resultFormat: int16,
    }),
  ),
  fc.record({ type: fc.constant('Parse' as const), name: str(80), query: str(200), parameterTypes: fc.array(uint32, { maxLength: 5 }) }),
  fc.record({ type: fc.constant('AuthenticationResponse' as const), data: bytes() }),
  fc.record({ type: fc.constant('Query' as const), query: str(200) }),
  fc.constant({ type: 'Sync' as const }),
  fc.constant({ type: 'Terminate' as const }),
);

/** The 'p' messages with the decoder hint each needs. */
export const authResponse: Arbitrary<{ kind: AuthenticationResponseKind; message: TypedFrontendMessage }> = fc.oneof(
  bytes().map((data) => ({ kind: 'GSSResponse' as const, message: { type: 'GSSResponse' as const, data } })),
  str().map((password) => ({ kind: 'PasswordMessage' as const, message: { type: 'PasswordMessage' as const, password } })),
  fc.record({ mechanism: str(), data: nullableBytes }).map((m) => ({
    kind: 'SASLInitialResponse' as const,
    message: { type: 'SASLInitialResponse' as const, ...m },
  })),
  bytes().map((data) => ({ kind: 'SASLResponse' as const, message: { type: 'SASLResponse' as const, data } })),
);

export const frontendMessage: Arbitrary<FrontendMessage> = fc.oneof(startupPacket, typedFrontend);

const noticeFields = fc
  .dictionary(
    fc.integer({ min: 1, max: 255 }).map((c) => String.fromCharCode(c)),
    str(40),
    { maxKeys: 8 },
  )
  .map((d) => ({ ...d }));
const copyResponse = <T extends 'CopyInResponse' | 'CopyOutResponse' | 'CopyBothResponse'>(type: T) =>
  fc.record({ type: fc.constant(type), format, columnFormats: fc.array(int16, { maxLength: 6 }) });
const field = fc.record({
  name: str(),
  tableOid: uint32,
  columnAttributeNumber: int16,
  dataTypeOid: uint32,
  dataTypeSize: int16,
  typeModifier: int32,
  format: int16,
});

export const backendMessage: Arbitrary<BackendMessage> = fc.oneof(
  fc.constant({ type: 'AuthenticationOk' as const }),
  fc.constant({ type: 'AuthenticationKerberosV5' as const }),
  fc.constant({ type: 'AuthenticationCleartextPassword' as const }),
  fc.record({ type: fc.constant('AuthenticationMD5Password' as const), salt: bytes(4, 4) }),
  fc.constant({ type: 'AuthenticationGSS' as const }),
  fc.record({ type: fc.constant('AuthenticationGSSContinue' as const), data: bytes() }),
  fc.constant({ type: 'AuthenticationSSPI' as const }),
  fc.record({ type: fc.constant('AuthenticationSASL' as const), mechanisms: fc.array(nonEmptyStr(), { maxLength: 3 }) }),
  fc.record({ type: fc.constant('AuthenticationSASLContinue' as const), data: bytes() }),
  fc.record({ type: fc.constant('AuthenticationSASLFinal' as const), data: bytes() }),
  fc.record({ type: fc.constant('BackendKeyData' as const), processId: int32, secretKey: fc.oneof(bytes(4, 4), bytes(256, 4)) }),
  fc.constant({ type: 'BindComplete' as const }),
  fc.constant({ type: 'CloseComplete' as const }),
  fc.record({ type: fc.constant('CommandComplete' as const), tag: str() }),
  fc.record({ type: fc.constant('CopyData' as const), data: bytes() }),
  fc.constant({ type: 'CopyDone' as const }),
  copyResponse('CopyInResponse'),
  copyResponse('CopyOutResponse'),
  copyResponse('CopyBothResponse'),
  fc.record({ type: fc.constant('DataRow' as const), values: fc.array(nullableBytes, { maxLength: 8 }) }),
  fc.constant({ type: 'EmptyQueryResponse' as const }),
  fc.record({ type: fc.constant('ErrorResponse' as const), fields: noticeFields }),
  fc.record({ type: fc.constant('NoticeResponse' as const), fields: noticeFields }),
  fc.record({ type: fc.constant('FunctionCallResponse' as const), result: nullableBytes }),
  fc.record({
    type: fc.constant('NegotiateProtocolVersion' as const),
    newestProtocolVersion: int32,
    unrecognizedOptions: fc.array(str(), { maxLength: 4 }),
  }),
  fc.constant({ type: 'NoData' as const }),
  fc.record({ type: fc.constant('NotificationResponse' as const), processId: int32, channel: str(), payload: str(100) }),
  fc.record({ type: fc.constant('ParameterDescription' as const), parameterTypes: fc.array(uint32, { maxLength: 6 }) }),
  fc.record({ type: fc.constant('ParameterStatus' as const), name: str(), value: str() }),
  fc.constant({ type: 'ParseComplete' as const }),
  fc.constant({ type: 'PortalSuspended' as const }),
  fc.record({ type: fc.constant('ReadyForQuery' as const), status: fc.constantFrom('I' as const, 'T' as const, 'E' as const) }),
  fc.record({ type: fc.constant('RowDescription' as const), fields: fc.array(field, { maxLength: 5 }) }),
);

/** Every message type name, to prove the generators cover them all. */
export const ALL_FRONTEND_TYPES = [
  'StartupMessage', 'SSLRequest', 'GSSENCRequest', 'CancelRequest',
  'Bind', 'Close', 'CopyData', 'CopyDone', 'CopyFail', 'Describe', 'Execute', 'Flush', 'FunctionCall',
  'GSSResponse', 'Parse', 'PasswordMessage', 'SASLInitialResponse', 'SASLResponse', 'AuthenticationResponse',
  'Query', 'Sync', 'Terminate',
] as const satisfies readonly FrontendMessage['type'][];

export const ALL_BACKEND_TYPES = [
  'AuthenticationOk', 'AuthenticationKerberosV5', 'AuthenticationCleartextPassword', 'AuthenticationMD5Password',
  'AuthenticationGSS', 'AuthenticationGSSContinue', 'AuthenticationSSPI', 'AuthenticationSASL',
  'AuthenticationSASLContinue', 'AuthenticationSASLFinal', 'BackendKeyData', 'BindComplete', 'CloseComplete',
  'CommandComplete', 'CopyData', 'CopyDone', 'CopyInResponse', 'CopyOutResponse', 'CopyBothResponse', 'DataRow',
  'EmptyQueryResponse', 'ErrorResponse', 'NoticeResponse', 'FunctionCallResponse', 'NegotiateProtocolVersion',
  'NoData', 'NotificationResponse', 'ParameterDescription', 'ParameterStatus', 'ParseComplete', 'PortalSuspended',
  'ReadyForQuery', 'RowDescription',
] as const satisfies readonly BackendMessage['type'][];
