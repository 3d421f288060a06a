import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { BackendDecoder, FrontendDecoder, ProtocolError, encodeBackend, encodeFrontend } from '../src/index.js';
import { backendMessage, typedFrontend, startupPacket } from './arbitraries.js';

type AnyDecoder = BackendDecoder | FrontendDecoder;

/**
 * Feed chunks, draining typed or raw; returns the error thrown, if any.
 * Each call to next() consumes bytes or returns undefined, so this cannot loop forever.
 */
function feed(d: AnyDecoder, chunks: Buffer[], raw: boolean, finish: boolean): unknown {
  try {
    for (const c of chunks) {
      d.push(c);
      let guard = 0;
      while ((raw ? d.nextRaw() : d.next()) !== undefined) {
        if (++guard > 1_000_000) throw new Error('decoder did not make progress');
      }
    }
    if (finish) d.end();
    return undefined;
  } catch (e) {
    return e;
  }
}

const junk = fc.array(fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a)), { maxLength: 8 });
const decoders = fc.constantFrom<() => AnyDecoder>(
  () => new BackendDecoder(),
  () => new FrontendDecoder(),
  () => new FrontendDecoder({ startup: false }),
  () => new FrontendDecoder({ startup: false, authentication: 'SASLInitialResponse' }),
  () => new FrontendDecoder({ startup: false, authentication: 'PasswordMessage' }),
);

function expectProtocolErrorOrNothing(e: unknown): void {
  if (e === undefined) return;
  expect(e).toBeInstanceOf(ProtocolError);
  const pe = e as ProtocolError;
  expect(pe.sqlstate).toBe('08P01');
  expect(Number.isInteger(pe.offset) && pe.offset >= 0).toBe(true);
}

describe('malformed input raises ProtocolError and nothing else', () => {
  it('random bytes, random chunking, typed and raw, with end()', () => {
    let failures = 0;
    fc.assert(
      fc.property(decoders, junk, fc.boolean(), (make, chunks, raw) => {
        const d = make();
        const e = feed(d, chunks, raw, true);
        expectProtocolErrorOrNothing(e);
        if (e !== undefined) {
          failures++;
          // A failed decoder stays failed, with the same error.
          expect(() => d.push(Buffer.from([0]))).toThrow(e as Error);
          expect(() => d.next()).toThrow(e as Error);
          expect(d.error).toBe(e);
        }
      }),
      { numRuns: 5000 },
    );
    expect(failures).toBeGreaterThan(2500);
  });

  it('plausible headers with random bodies (reaches the typed parsers)', () => {
    const frontendTypes = [...'BCDEFHPQSXcdfp'].map((c) => c.charCodeAt(0));
    const backendTypes = [...'RK23CdcGHWDIEVvnNAtS1sZT'].map((c) => c.charCodeAt(0));
    fc.assert(
      fc.property(
        fc.boolean(),
        fc.array(fc.tuple(fc.nat(30), fc.uint8Array({ maxLength: 40 })), { minLength: 1, maxLength: 6 }),
        fc.boolean(),
        (backend, parts, raw) => {
          const types = backend ? backendTypes : frontendTypes;
          const stream = Buffer.concat(
            parts.map(([t, body]) => {
              const h = Buffer.alloc(5);
              h[0] = types[t % types.length]!;
              h.writeInt32BE(body.length + 4, 1);
              return Buffer.concat([h, body]);
            }),
          );
          const d = backend ? new BackendDecoder() : new FrontendDecoder({ startup: false });
          expectProtocolErrorOrNothing(feed(d, [stream], raw, true));
        },
      ),
      { numRuns: 5000 },
    );
  });

  it('valid streams with random bytes flipped', () => {
    fc.assert(
      fc.property(
        fc.array(backendMessage, { minLength: 1, maxLength: 10 }),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 }),
        (msgs, flips) => {
          const stream = Buffer.concat(msgs.map(encodeBackend));
          for (const [at, v] of flips) stream[at % stream.length] = v;
          expectProtocolErrorOrNothing(feed(new BackendDecoder(), [stream], false, true));
        },
      ),
      { numRuns: 3000 },
    );
    fc.assert(
      fc.property(
        startupPacket,
        fc.array(typedFrontend, { maxLength: 10 }),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 }),
        (st, msgs, flips) => {
          const stream = Buffer.concat([st, ...msgs].map(encodeFrontend));
          for (const [at, v] of flips) stream[at % stream.length] = v;
          expectProtocolErrorOrNothing(feed(new FrontendDecoder(), [stream], false, true));
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('truncated streams yield a prefix, nothing more until bytes come, and end() reports the truncation', () => {
    fc.assert(
      fc.property(fc.array(backendMessage, { minLength: 1, maxLength: 10 }), fc.nat(), (msgs, cutRaw) => {
        const encoded = msgs.map(encodeBackend);
        const stream = Buffer.concat(encoded);
        const cut = cutRaw % stream.length; // strictly inside the stream
        const d = new BackendDecoder();
        d.push(stream.subarray(0, cut));
        const got = d.drain();
        let boundary = 0;
        let whole = 0;
        while (whole < encoded.length && boundary + encoded[whole]!.length <= cut) boundary += encoded[whole++]!.length;
        expect(got).toEqual(msgs.slice(0, whole));
        expect(d.next()).toBeUndefined();
        expect(d.bufferedBytes).toBe(cut - boundary);
        if (cut === boundary) {
          expect(() => d.end()).not.toThrow();
        } else {
          expect(() => d.end()).toThrow(ProtocolError);
        }
        // The rest completes it.
        const d2 = new BackendDecoder();
        d2.push(stream.subarray(0, cut));
        d2.drain();
        d2.push(stream.subarray(cut));
        expect(d2.drain()).toEqual(msgs.slice(whole));
        d2.end();
      }),
      { numRuns: 2000 },
    );
  });

  it('truncated frontend streams (startup packet first) behave the same', () => {
    fc.assert(
      fc.property(startupPacket.filter((m) => m.type !== 'CancelRequest'), fc.array(typedFrontend, { maxLength: 8 }), fc.nat(), (st, msgs, cutRaw) => {
        const all = st.type === 'StartupMessage' ? [st, ...msgs] : [st];
        const encoded = all.map(encodeFrontend);
        const stream = Buffer.concat(encoded);
        const cut = cutRaw % stream.length;
        let boundary = 0;
        let whole = 0;
        while (whole < encoded.length && boundary + encoded[whole]!.length <= cut) boundary += encoded[whole++]!.length;
        const d = new FrontendDecoder();
        d.push(stream.subarray(0, cut));
        expect(d.drain()).toHaveLength(whole);
        expect(d.bufferedBytes).toBe(cut - boundary);
        if (cut === boundary) expect(() => d.end()).not.toThrow();
        else expect(() => d.end()).toThrow(ProtocolError);
      }),
      { numRuns: 1000 },
    );
  });

  it('oversized lengths fail at the header, before any body is buffered', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1025, max: 0x7fffffff }),
        fc.constantFrom(...'DTCZEd'),
        fc.nat(50),
        (len, type, skip) => {
          const prefix = Buffer.concat(Array.from({ length: skip % 5 }, () => encodeBackend({ type: 'NoData' })));
          const h = Buffer.alloc(5);
          h[0] = type.charCodeAt(0);
          h.writeInt32BE(len, 1);
          const d = new BackendDecoder({ maxMessageSize: 1024 });
          d.push(prefix);
          d.drain();
          d.push(h);
          let err: unknown;
          try {
            d.next();
          } catch (e) {
            err = e;
          }
          expect(err).toBeInstanceOf(ProtocolError);
          expect((err as ProtocolError).offset).toBe(prefix.length + 1);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('negative and too-small lengths fail', () => {
    for (const len of [-1, -0x80000000, 0, 3]) {
      const h = Buffer.alloc(5);
      h[0] = 0x5a;
      h.writeInt32BE(len, 1);
      const d = new BackendDecoder();
      d.push(h);
      expect(() => d.next()).toThrow(ProtocolError);
    }
  });
});
