import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { BackendDecoder, FrontendDecoder, encodeBackend, encodeFrontend } from '../src/index.js';
import type { BackendMessage, FrontendMessage, RawMessage } from '../src/index.js';
import { backendMessage, startupPacket, typedFrontend } from './arbitraries.js';

/** Cut `stream` at the given (unsorted, possibly repeated) positions. */
function split(stream: Buffer, cuts: number[]): Buffer[] {
  const points = [...new Set(cuts.map((c) => c % (stream.length + 1)))].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let prev = 0;
  for (const p of points) {
    out.push(stream.subarray(prev, p));
    prev = p;
  }
  out.push(stream.subarray(prev));
  return out;
}

const cuts = fc.array(fc.nat(), { maxLength: 40 });

function decodeChunks<M>(dec: { push(c: Buffer): void; next(): M | undefined; end(): void }, chunks: Buffer[]): M[] {
  const out: M[] = [];
  for (const c of chunks) {
    dec.push(c);
    for (let m = dec.next(); m !== undefined; m = dec.next()) out.push(m);
  }
  dec.end();
  return out;
}

function rawChunks(dec: { push(c: Buffer): void; nextRaw(): RawMessage | undefined; end(): void }, chunks: Buffer[]): RawMessage[] {
  const out: RawMessage[] = [];
  for (const c of chunks) {
    dec.push(c);
    for (let m = dec.nextRaw(); m !== undefined; m = dec.nextRaw()) out.push(m);
  }
  dec.end();
  return out;
}

describe('any split of a valid stream decodes to the same messages', () => {
  it('backend stream, typed and raw', () => {
    fc.assert(
      fc.property(fc.array(backendMessage, { minLength: 1, maxLength: 30 }), cuts, (msgs, cutAt) => {
        const encoded = msgs.map(encodeBackend);
        const stream = Buffer.concat(encoded);
        const chunks = split(stream, cutAt);
        expect(decodeChunks<BackendMessage>(new BackendDecoder(), chunks)).toEqual(msgs);
        const raw = rawChunks(new BackendDecoder(), chunks);
        expect(raw.map((r) => r.type)).toEqual(encoded.map((e) => e[0]));
        expect(raw.map((r) => r.bytes)).toEqual(encoded);
      }),
      { numRuns: 1500 },
    );
  });

  it('frontend stream: SSLRequest, StartupMessage, then typed messages', () => {
    const startup = fc.record({
      type: fc.constant('StartupMessage' as const),
      protocolVersion: fc.constantFrom(196608, 196610),
      parameters: fc.constant({ user: 'alice', database: 'db' }),
    });
    fc.assert(
      fc.property(fc.boolean(), startup, fc.array(typedFrontend, { maxLength: 30 }), cuts, (ssl, st, msgs, cutAt) => {
        const all: FrontendMessage[] = [...(ssl ? [{ type: 'SSLRequest' as const }] : []), st, ...msgs];
        const encoded = all.map(encodeFrontend);
        const chunks = split(Buffer.concat(encoded), cutAt);
        const decoded = decodeChunks<FrontendMessage>(new FrontendDecoder(), chunks);
        expect(decoded.map((m) => (m.type === 'StartupMessage' ? { ...m, parameters: { ...m.parameters } } : m))).toEqual(all);
        const raw = rawChunks(new FrontendDecoder(), chunks);
        expect(raw.map((r) => r.bytes)).toEqual(encoded);
        expect(raw.map((r) => r.type)).toEqual(all.map((m, i) => (m.type === 'SSLRequest' || m.type === 'StartupMessage' ? 0 : encoded[i]![0])));
      }),
      { numRuns: 1500 },
    );
  });

  it('a lone startup packet of any kind, split anywhere', () => {
    fc.assert(
      fc.property(startupPacket, cuts, (m, cutAt) => {
        const chunks = split(encodeFrontend(m), cutAt);
        expect(decodeChunks<FrontendMessage>(new FrontendDecoder(), chunks)).toEqual([m]);
      }),
      { numRuns: 1000 },
    );
  });

  it('pushing every chunk before draining gives the same messages (queued, not copied)', () => {
    fc.assert(
      fc.property(fc.array(backendMessage, { minLength: 1, maxLength: 20 }), cuts, fc.nat(40), (msgs, cutAt, drainAfter) => {
        const encoded = msgs.map(encodeBackend);
        const chunks = split(Buffer.concat(encoded), cutAt);
        const d = new BackendDecoder();
        const got: BackendMessage[] = [];
        chunks.forEach((c, i) => {
          d.push(c);
          if (i === drainAfter) got.push(...d.drain());
        });
        expect(d.bufferedBytes).toBe(Buffer.concat(chunks).length - got.reduce((n, m) => n + encodeBackend(m).length, 0));
        got.push(...d.drain());
        d.end();
        expect(got).toEqual(msgs);
      }),
      { numRuns: 1000 },
    );
  });

  it('one byte at a time', () => {
    const msgs: BackendMessage[] = [
      { type: 'RowDescription', fields: [{ name: 'x', tableOid: 0, columnAttributeNumber: 0, dataTypeOid: 23, dataTypeSize: 4, typeModifier: -1, format: 0 }] },
      { type: 'DataRow', values: [Buffer.from('42'), null] },
      { type: 'CommandComplete', tag: 'SELECT 1' },
      { type: 'ReadyForQuery', status: 'I' },
    ];
    const stream = Buffer.concat(msgs.map(encodeBackend));
    const chunks = [...stream].map((b) => Buffer.from([b]));
    expect(decodeChunks<BackendMessage>(new BackendDecoder(), chunks)).toEqual(msgs);
  });

  it('messages inside one chunk are views of it, not copies', () => {
    const chunk = Buffer.concat([encodeBackend({ type: 'ParseComplete' }), encodeBackend({ type: 'BindComplete' })]);
    const d = new BackendDecoder();
    d.push(chunk);
    const a = d.nextRaw()!;
    const b = d.nextRaw()!;
    expect(a.bytes.buffer).toBe(chunk.buffer);
    expect(b.bytes.byteOffset).toBe(chunk.byteOffset + 5);
    expect(d.advance()).toBe(-1);
  });

  it('the frame-only cursor sees the same frames as nextRaw', () => {
    fc.assert(
      fc.property(fc.array(backendMessage, { minLength: 1, maxLength: 20 }), cuts, (msgs, cutAt) => {
        const encoded = msgs.map(encodeBackend);
        const chunks = split(Buffer.concat(encoded), cutAt);
        const d = new BackendDecoder();
        const seen: Buffer[] = [];
        for (const c of chunks) {
          d.push(c);
          for (let t = d.advance(); t >= 0; t = d.advance()) {
            expect(t).toBe(d.frameBuffer[d.frameStart]);
            seen.push(Buffer.from(d.frameBuffer.subarray(d.frameStart, d.frameEnd)));
          }
        }
        d.end();
        expect(seen).toEqual(encoded);
      }),
      { numRuns: 500 },
    );
  });

  it('pushing before draining keeps order', () => {
    const a = encodeBackend({ type: 'CommandComplete', tag: 'A' });
    const b = encodeBackend({ type: 'CommandComplete', tag: 'B' });
    const d = new BackendDecoder();
    d.push(a);
    d.push(b.subarray(0, 3));
    d.push(b.subarray(3));
    expect(d.drain()).toEqual([
      { type: 'CommandComplete', tag: 'A' },
      { type: 'CommandComplete', tag: 'B' },
    ]);
  });
});
