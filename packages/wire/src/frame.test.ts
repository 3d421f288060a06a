import { describe, expect, it } from 'vitest';
import { BackendDecoder } from './backend/decoder.js';
import { FrontendDecoder } from './frontend/decoder.js';
import { encodeBackend } from './backend/encode.js';
import { encodeFrontend } from './frontend/encode.js';
import { ProtocolError } from './errors.js';

function msg(type: string, body: number[] | Buffer, len?: number): Buffer {
  const b = Buffer.from(body);
  const h = Buffer.alloc(5);
  h[0] = type.charCodeAt(0);
  h.writeInt32BE(len ?? b.length + 4, 1);
  return Buffer.concat([h, b]);
}

function errorOf(f: () => unknown): ProtocolError {
  try {
    f();
  } catch (e) {
    if (e instanceof ProtocolError) return e;
    throw e;
  }
  throw new Error('expected a ProtocolError');
}

const startup = encodeFrontend({ type: 'StartupMessage', protocolVersion: 196608, parameters: { user: 'u' } });

describe('framing limits and errors, with stream offsets', () => {
  it('unknown backend type byte, at its offset', () => {
    const d = new BackendDecoder();
    d.push(Buffer.concat([encodeBackend({ type: 'NoData' }), msg('?', [])]));
    expect(d.next()).toEqual({ type: 'NoData' });
    const e = errorOf(() => d.next());
    expect(e.offset).toBe(5);
    expect(e.sqlstate).toBe('08P01');
    expect(e.message).toMatch(/unknown message type '\?'/);
  });

  it('unknown type is reported from the first byte, before the length arrives', () => {
    const d = new FrontendDecoder({ startup: false });
    d.push(Buffer.from([0x5a]));
    expect(errorOf(() => d.next()).offset).toBe(0); // 'Z' is backend-only
  });

  it('length below 4 and above the limit', () => {
    const d1 = new BackendDecoder();
    d1.push(msg('Z', [], 3));
    expect(errorOf(() => d1.next()).offset).toBe(1);
    const d2 = new BackendDecoder({ maxMessageSize: 100 });
    d2.push(msg('D', [], 101));
    expect(errorOf(() => d2.next()).message).toMatch(/invalid length 101/);
    const d3 = new BackendDecoder({ maxMessageSize: 100 });
    d3.push(msg('D', [0, 0], 100).subarray(0, 5));
    expect(d3.next()).toBeUndefined(); // at the limit is fine
  });

  it('frontend name-only messages are bounded at 10 000 bytes, auth messages at 65 535', () => {
    const d = new FrontendDecoder({ startup: false });
    d.push(msg('S', [], 10_001).subarray(0, 5));
    expect(errorOf(() => d.next()).message).toMatch(/allowed 4\.\.10000/);
    const p = new FrontendDecoder({ startup: false });
    p.push(msg('p', [], 65_536).subarray(0, 5));
    expect(() => p.next()).toThrow(ProtocolError);
    const q = new FrontendDecoder({ startup: false });
    q.push(msg('Q', [], 1_000_000).subarray(0, 5));
    expect(q.next()).toBeUndefined();
  });

  it('trailing bytes inside a typed message', () => {
    const d = new BackendDecoder();
    d.push(msg('Z', [0x49, 0x00]));
    const e = errorOf(() => d.next());
    expect(e.message).toMatch(/1 trailing byte\(s\) in ReadyForQuery/);
    expect(e.offset).toBe(6);
  });

  it('a field running past the message end', () => {
    const d = new BackendDecoder();
    d.push(msg('D', [0, 1, 0, 0, 0, 9, 1, 2]));
    expect(errorOf(() => d.next()).message).toMatch(/truncated column value/);
    const c = new BackendDecoder();
    c.push(msg('C', [0x41, 0x42]));
    expect(errorOf(() => c.next()).message).toMatch(/unterminated command tag/);
  });

  it('the decoder stays failed', () => {
    const d = new BackendDecoder();
    d.push(msg('Z', [0x51]));
    const e = errorOf(() => d.next());
    expect(d.error).toBe(e);
    expect(() => d.push(encodeBackend({ type: 'NoData' }))).toThrow(e);
    expect(() => d.next()).toThrow(e);
    expect(() => d.nextRaw()).toThrow(e);
    expect(() => d.advance()).toThrow(e);
    expect(() => d.end()).toThrow(e);
  });

  it('end() accepts a clean boundary and rejects a partial message', () => {
    const d = new BackendDecoder();
    const m = encodeBackend({ type: 'CommandComplete', tag: 'SELECT 1' });
    d.push(m);
    d.drain();
    expect(() => d.end()).not.toThrow();
    d.push(m.subarray(0, 7));
    expect(d.next()).toBeUndefined();
    expect(d.bufferedBytes).toBe(7);
    expect(errorOf(() => d.end()).offset).toBe(m.length + 7);
  });
});

describe('startup mode', () => {
  it('SSLRequest and GSSENCRequest are followed by another startup packet', () => {
    const d = new FrontendDecoder();
    d.push(Buffer.concat([
      encodeFrontend({ type: 'SSLRequest' }),
      encodeFrontend({ type: 'GSSENCRequest' }),
      startup,
      encodeFrontend({ type: 'Query', query: 'select 1' }),
    ]));
    expect(d.inStartup).toBe(true);
    expect(d.drain().map((m) => m.type)).toEqual(['SSLRequest', 'GSSENCRequest', 'StartupMessage', 'Query']);
    expect(d.inStartup).toBe(false);
  });

  it('raw startup packets have type 0', () => {
    const d = new FrontendDecoder();
    d.push(Buffer.concat([startup, encodeFrontend({ type: 'Sync' })]));
    expect(d.nextRaw()).toEqual({ type: 0, bytes: startup });
    expect(d.nextRaw()?.type).toBe(0x53);
  });

  it('startup packet length bounds (Postgres MAX_STARTUP_PACKET_LENGTH)', () => {
    for (const len of [7, 10_001, -5]) {
      const b = Buffer.alloc(8);
      b.writeInt32BE(len, 0);
      b.writeInt32BE(196608, 4);
      const d = new FrontendDecoder();
      d.push(b);
      expect(errorOf(() => d.next()).offset).toBe(0);
    }
    const small = new FrontendDecoder({ maxStartupPacketSize: 20 });
    small.push(encodeFrontend({ type: 'StartupMessage', protocolVersion: 196608, parameters: { user: 'a-long-user-name' } }));
    expect(() => small.next()).toThrow(/invalid startup packet length/);
  });

  it('a Terminate instead of a startup packet is framed as Terminate (a client that ends at once)', () => {
    const d = new FrontendDecoder();
    d.push(encodeFrontend({ type: 'Terminate' }));
    expect(d.nextRaw()).toEqual({ type: 0x58, bytes: encodeFrontend({ type: 'Terminate' }) });
    const split = new FrontendDecoder();
    split.push(Buffer.from([0x58, 0, 0]));
    expect(split.nextRaw()).toBeUndefined();
    split.push(Buffer.from([0, 4]));
    expect(split.nextRaw()?.type).toBe(0x58);
    const bad = new FrontendDecoder();
    bad.push(Buffer.from([0x58, 0, 0, 0, 1]));
    expect(() => bad.nextRaw()).toThrow(/invalid length 1 for message type 'X'/);
  });

  it('unsupported protocol versions fail, 3.x of any minor passes', () => {
    const b = Buffer.alloc(9);
    b.writeInt32BE(9, 0);
    b.writeInt32BE(2 << 16, 4);
    const d = new FrontendDecoder();
    d.push(b);
    expect(errorOf(() => d.next()).message).toMatch(/unsupported frontend protocol 2\.0/);
    b.writeInt32BE((3 << 16) | 7, 4);
    const ok = new FrontendDecoder();
    ok.push(b);
    expect(ok.next()).toEqual({ type: 'StartupMessage', protocolVersion: 196615, parameters: {} });
  });

  it('nothing may follow a CancelRequest', () => {
    const d = new FrontendDecoder();
    const cancel = encodeFrontend({ type: 'CancelRequest', processId: 7, secretKey: Buffer.alloc(32, 1) });
    d.push(Buffer.concat([cancel, Buffer.from([0])]));
    expect(d.next()).toEqual({ type: 'CancelRequest', processId: 7, secretKey: Buffer.alloc(32, 1) });
    expect(errorOf(() => d.next()).offset).toBe(cancel.length);
  });

  it('cancel keys outside 4..256 bytes fail', () => {
    for (const n of [3, 257]) {
      const b = Buffer.alloc(12 + n);
      b.writeInt32BE(12 + n, 0);
      b.writeInt32BE(80877102, 4);
      const d = new FrontendDecoder();
      d.push(b);
      expect(errorOf(() => d.next()).offset).toBe(12);
    }
  });

  it('SSLRequest with a body fails', () => {
    const b = Buffer.alloc(12);
    b.writeInt32BE(12, 0);
    b.writeInt32BE(80877103, 4);
    const d = new FrontendDecoder();
    d.push(b);
    expect(errorOf(() => d.next()).message).toMatch(/trailing/);
  });

  it('expectStartup() switches back to startup mode', () => {
    const d = new FrontendDecoder({ startup: false });
    expect(d.inStartup).toBe(false);
    d.expectStartup();
    d.push(encodeFrontend({ type: 'SSLRequest' }));
    expect(d.next()).toEqual({ type: 'SSLRequest' });
  });

  it("the 'p' kind advances from SASLInitialResponse to SASLResponse", () => {
    const d = new FrontendDecoder({ startup: false, authentication: 'SASLInitialResponse' });
    d.push(encodeFrontend({ type: 'SASLInitialResponse', mechanism: 'SCRAM-SHA-256', data: Buffer.from('n,,n=,r=abc') }));
    d.push(encodeFrontend({ type: 'SASLResponse', data: Buffer.from('c=biws') }));
    expect(d.drain().map((m) => m.type)).toEqual(['SASLInitialResponse', 'SASLResponse']);
    expect(d.expectedAuthentication).toBe('SASLResponse');
    d.expectAuthentication(undefined);
    d.push(encodeFrontend({ type: 'PasswordMessage', password: 'x' }));
    expect(d.next()).toEqual({ type: 'AuthenticationResponse', data: Buffer.from('x\0') });
  });
});

describe('push(chunk, length)', () => {
  const ready = encodeBackend({ type: 'ReadyForQuery', status: 'I' });
  const complete = encodeBackend({ type: 'CommandComplete', tag: 'SELECT 1' });

  it('frames only the first `length` bytes of a larger read buffer, as views of it', () => {
    const buffer = Buffer.alloc(1024, 0xff); // what follows the bytes read is garbage
    const read = Buffer.concat([complete, ready]);
    read.copy(buffer);
    const d = new BackendDecoder();
    d.push(buffer, read.length);
    const a = d.nextRaw();
    const b = d.nextRaw();
    expect(a?.bytes.equals(complete)).toBe(true);
    expect(b?.bytes.equals(ready)).toBe(true);
    expect(b?.bytes.buffer).toBe(buffer.buffer);
    expect(d.nextRaw()).toBeUndefined();
    expect(d.bufferedBytes).toBe(0);
  });

  it('a message split across two partly filled buffers, and a buffer pushed before draining', () => {
    const d = new BackendDecoder();
    const whole = Buffer.concat([complete, ready]);
    const first = Buffer.alloc(64, 0xff);
    whole.copy(first, 0, 0, 3);
    d.push(first, 3);
    expect(d.nextRaw()).toBeUndefined();
    const second = Buffer.alloc(64, 0xff);
    whole.copy(second, 0, 3);
    d.push(second, whole.length - 3);
    const third = Buffer.alloc(64, 0xff);
    ready.copy(third);
    d.push(third, ready.length); // queued: the decoder still holds undrained bytes
    expect(d.bufferedBytes).toBe(whole.length + ready.length);
    const got = [d.nextRaw(), d.nextRaw(), d.nextRaw()].map((m) => m?.bytes.toString('hex'));
    expect(got).toEqual([complete, ready, ready].map((b) => b.toString('hex')));
    expect(d.nextRaw()).toBeUndefined();
  });

  it('rejects a length beyond the chunk', () => {
    expect(() => new BackendDecoder().push(Buffer.alloc(4), 5)).toThrow(RangeError);
  });
});
