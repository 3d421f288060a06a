// The agent's two protocol cores, bytes in and verdicts out: the startup-phase packet reader and
// the message-boundary tracker of raw forwarded bytes.
import { describe, expect, it } from 'vitest';
import { encodeBackend, encodeFrontend, encodeStartupPacket, errorResponse, PROTOCOL_3_0 } from '@quicpool/wire';
import { MessageBoundary, readFirstPacket } from '../src/agent/index.js';

const startup = encodeStartupPacket({ type: 'StartupMessage', protocolVersion: PROTOCOL_3_0, parameters: { user: 'app', database: 'shop' } });

describe('readFirstPacket', () => {
  it('waits for a whole packet, then names it and its length', () => {
    expect(readFirstPacket(startup.subarray(0, 3)).kind).toBe('incomplete');
    expect(readFirstPacket(startup.subarray(0, startup.length - 1)).kind).toBe('incomplete');
    const r = readFirstPacket(Buffer.concat([startup, Buffer.from('Q')]));
    expect(r.kind).toBe('startup');
    if (r.kind !== 'startup') return;
    expect(r.length).toBe(startup.length);
    expect(r.message.parameters['user']).toBe('app');
    expect(r.message.parameters['database']).toBe('shop');
  });

  it('SSLRequest and GSSENCRequest are encryption requests; a CancelRequest keeps its bytes', () => {
    const ssl = readFirstPacket(encodeStartupPacket({ type: 'SSLRequest' }));
    expect(ssl).toEqual({ kind: 'encryptionRequest', request: 'SSLRequest', length: 8 });
    expect(readFirstPacket(encodeStartupPacket({ type: 'GSSENCRequest' }))).toEqual({ kind: 'encryptionRequest', request: 'GSSENCRequest', length: 8 });
    const cancelBytes = encodeStartupPacket({ type: 'CancelRequest', processId: 42, secretKey: Buffer.from([1, 2, 3, 4]) });
    const cancel = readFirstPacket(cancelBytes);
    expect(cancel.kind).toBe('cancel');
    if (cancel.kind === 'cancel') expect(cancel.bytes.equals(cancelBytes)).toBe(true);
  });

  it("a Terminate before any startup packet is a terminate (closed in silence), not a length of 1476395008", () => {
    const x = encodeFrontend({ type: 'Terminate' });
    expect(readFirstPacket(x)).toEqual({ kind: 'terminate' });
    expect(readFirstPacket(x.subarray(0, 1))).toEqual({ kind: 'terminate' });
  });

  it('refuses a bad length, an oversized packet, another protocol and a direct TLS handshake', () => {
    const bad = Buffer.alloc(8);
    bad.writeInt32BE(4, 0);
    expect(readFirstPacket(bad)).toMatchObject({ kind: 'invalid', reason: 'invalid startup packet length 4' });
    const huge = Buffer.alloc(8);
    huge.writeInt32BE(20_000, 0);
    expect(readFirstPacket(huge)).toMatchObject({ kind: 'invalid' });
    const v2 = Buffer.alloc(8);
    v2.writeInt32BE(8, 0);
    v2.writeInt32BE(2 << 16, 4);
    expect(readFirstPacket(v2)).toMatchObject({ kind: 'invalid', reason: expect.stringMatching(/unsupported frontend protocol 2\.0/) });
    expect(readFirstPacket(Buffer.from([0x16, 0x03, 0x01, 0x00, 0x10]))).toMatchObject({ kind: 'invalid', reason: expect.stringMatching(/direct TLS/) });
  });
});

describe('MessageBoundary', () => {
  const stream = Buffer.concat([
    encodeBackend({ type: 'AuthenticationOk' }),
    encodeBackend({ type: 'ParameterStatus', name: 'server_version', value: '17.0' }),
    errorResponse('ERROR', '42P01', 'no such table'),
    encodeBackend({ type: 'ReadyForQuery', status: 'I' }),
  ]);

  it('is at a boundary only between whole messages, whatever the chunking', () => {
    for (const size of [1, 2, 3, 5, 7, 64]) {
      const b = new MessageBoundary();
      const seen: boolean[] = [];
      for (let i = 0; i < stream.length; i += size) {
        b.feed(stream.subarray(i, i + size));
        seen.push(b.atBoundary);
      }
      expect(b.atBoundary).toBe(true);
      if (size === 1) expect(seen.filter((x) => x).length).toBe(4);
    }
    const half = new MessageBoundary();
    half.feed(stream.subarray(0, 11));
    expect(half.atBoundary).toBe(false);
  });

  it('knows when the last whole message was a Terminate', () => {
    const b = new MessageBoundary();
    b.feed(encodeFrontend({ type: 'Query', query: 'select 1' }));
    expect(b.terminated).toBe(false);
    const x = encodeFrontend({ type: 'Terminate' });
    b.feed(x.subarray(0, 2));
    expect(b.terminated).toBe(false);
    b.feed(x.subarray(2));
    expect(b.terminated).toBe(true);
  });

  it('a length below 4 is not a protocol stream: never at a boundary again', () => {
    const b = new MessageBoundary();
    b.feed(Buffer.from([0x51, 0, 0, 0, 2]));
    expect(b.atBoundary).toBe(false);
    b.feed(encodeFrontend({ type: 'Sync' }));
    expect(b.atBoundary).toBe(false);
  });
});
