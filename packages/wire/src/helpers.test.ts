import { describe, expect, it } from 'vitest';
import { errorResponse, isDirectTlsHandshake, isSessionEndingError, noticeResponse, noticeSeverity, readyForQueryStatus } from './helpers.js';
import { encodeStartupPacket } from './startup.js';
import { decodeBackendMessage } from './backend/decode.js';
import { encodeBackend } from './backend/encode.js';
import { SQLSTATE } from './sqlstate.js';

describe('pooler helpers', () => {
  it('errorResponse builds a decodable ErrorResponse', () => {
    const b = errorResponse('FATAL', SQLSTATE.TOO_MANY_CONNECTIONS, 'sorry, too many clients already', { H: 'try later' });
    expect(decodeBackendMessage(b)).toEqual({
      type: 'ErrorResponse',
      fields: { S: 'FATAL', V: 'FATAL', C: '53300', M: 'sorry, too many clients already', H: 'try later' },
    });
    expect(decodeBackendMessage(noticeResponse('WARNING', '01000', 'w'))).toEqual({
      type: 'NoticeResponse',
      fields: { S: 'WARNING', V: 'WARNING', C: '01000', M: 'w' },
    });
    expect(() => errorResponse('ERROR', '08P01', 'x', { C: 'dup' })).toThrow(RangeError);
  });

  it('noticeSeverity reads V (else S) of a raw ErrorResponse or NoticeResponse', () => {
    expect(noticeSeverity(errorResponse('FATAL', '57P01', 'terminating connection'))).toBe('FATAL');
    expect(noticeSeverity(noticeResponse('WARNING', '01000', 'careful'))).toBe('WARNING');
    // A server localizing S ("FATAL" in German is "FATAL"; "ERROR" is "FEHLER"): V wins.
    const german = Buffer.concat([Buffer.from('E\0\0\0\0SFEHLER\0VERROR\0C42601\0Mx\0\0', 'latin1')]);
    german.writeInt32BE(german.length - 1, 1);
    expect(noticeSeverity(german)).toBe('ERROR');
    const onlyS = Buffer.from('E\0\0\0\0SPANIC\0CXX000\0\0', 'latin1');
    onlyS.writeInt32BE(onlyS.length - 1, 1);
    expect(noticeSeverity({ type: 0x45, bytes: onlyS })).toBe('PANIC');
    expect(noticeSeverity(encodeBackend({ type: 'NoData' }))).toBeUndefined();
    expect(noticeSeverity(Buffer.from('E\0\0\0\x07Sx', 'latin1'))).toBeUndefined(); // unterminated
  });

  it('isSessionEndingError: FATAL and PANIC ErrorResponses only', () => {
    expect(isSessionEndingError(errorResponse('FATAL', '57P01', 'bye'))).toBe(true);
    expect(isSessionEndingError(errorResponse('PANIC', 'XX000', 'bye'))).toBe(true);
    expect(isSessionEndingError(errorResponse('ERROR', '42601', 'syntax'))).toBe(false);
    expect(isSessionEndingError(noticeResponse('FATAL', '00000', 'a notice is never an error'))).toBe(false);
  });

  it('readyForQueryStatus reads the status byte of a raw message', () => {
    for (const status of ['I', 'T', 'E'] as const) {
      const b = encodeBackend({ type: 'ReadyForQuery', status });
      expect(readyForQueryStatus(b)).toBe(status);
      expect(readyForQueryStatus({ type: 0x5a, bytes: b })).toBe(status);
    }
    expect(readyForQueryStatus(encodeBackend({ type: 'NoData' }))).toBeUndefined();
    expect(readyForQueryStatus(Buffer.from([0x5a, 0, 0, 0, 5, 0x51]))).toBeUndefined();
  });

  it('isDirectTlsHandshake tells a TLS ClientHello from startup packets', () => {
    expect(isDirectTlsHandshake(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00]))).toBe(true);
    expect(isDirectTlsHandshake(encodeStartupPacket({ type: 'SSLRequest' }))).toBe(false);
    expect(isDirectTlsHandshake(encodeStartupPacket({ type: 'StartupMessage', protocolVersion: 196608, parameters: { user: 'u' } }))).toBe(false);
    expect(isDirectTlsHandshake(Buffer.from([0x16]))).toBe(false);
  });

  it('SQLSTATE constants', () => {
    expect(SQLSTATE).toMatchObject({
      PROTOCOL_VIOLATION: '08P01',
      INVALID_PASSWORD: '28P01',
      TOO_MANY_CONNECTIONS: '53300',
      QUERY_CANCELED: '57014',
      ADMIN_SHUTDOWN: '57P01',
    });
  });

  it('encoders reject what the wire cannot carry', () => {
    expect(() => encodeBackend({ type: 'CommandComplete', tag: 'a\0b' })).toThrow(RangeError);
    expect(() => encodeBackend({ type: 'DataRow', values: new Array<null>(40_000).fill(null) })).toThrow(RangeError);
    expect(() => encodeBackend({ type: 'BackendKeyData', processId: 1, secretKey: Buffer.alloc(3) })).toThrow(RangeError);
    expect(() => encodeBackend({ type: 'AuthenticationMD5Password', salt: Buffer.alloc(5) })).toThrow(RangeError);
  });
});
