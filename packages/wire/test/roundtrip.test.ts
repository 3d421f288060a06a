import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  BackendDecoder,
  FrontendDecoder,
  encodeBackend,
  encodeFrontend,
  decodeBackendMessage,
  decodeFrontendMessage,
  decodeStartupPacket,
} from '../src/index.js';
import type { BackendMessage, FrontendMessage } from '../src/index.js';
import {
  ALL_BACKEND_TYPES,
  ALL_FRONTEND_TYPES,
  authResponse,
  backendMessage,
  startupPacket,
  typedFrontend,
} from './arbitraries.js';

// Compile-time proof that the type lists (and so the generators checked below) cover every message.
type MissingF = Exclude<FrontendMessage['type'], (typeof ALL_FRONTEND_TYPES)[number]>;
type MissingB = Exclude<BackendMessage['type'], (typeof ALL_BACKEND_TYPES)[number]>;
const frontendComplete: [MissingF] extends [never] ? true : false = true;
const backendComplete: [MissingB] extends [never] ? true : false = true;

const RUNS = { numRuns: 2000 };

function decodeOneBackend(bytes: Buffer): BackendMessage[] {
  const d = new BackendDecoder();
  d.push(bytes);
  const out = d.drain();
  d.end();
  return out;
}

describe('round trips: decode(encode(m)) deep-equals m', () => {
  it('lists every message type', () => {
    expect(frontendComplete && backendComplete).toBe(true);
    expect(new Set(ALL_FRONTEND_TYPES).size).toBe(22);
    expect(new Set(ALL_BACKEND_TYPES).size).toBe(33);
  });

  it('backend messages, through the streaming decoder and decodeBackendMessage', () => {
    const seen = new Set<string>();
    fc.assert(
      fc.property(backendMessage, (m) => {
        seen.add(m.type);
        const bytes = encodeBackend(m);
        expect(bytes.readInt32BE(1)).toBe(bytes.length - 1);
        expect(decodeOneBackend(bytes)).toEqual([m]);
        expect(decodeBackendMessage(bytes)).toEqual(m);
      }),
      { numRuns: 5000 },
    );
    expect([...seen].sort()).toEqual([...ALL_BACKEND_TYPES].sort());
  });

  it('startup packets, in startup mode', () => {
    const seen = new Set<string>();
    fc.assert(
      fc.property(startupPacket, (m) => {
        seen.add(m.type);
        const bytes = encodeFrontend(m);
        expect(bytes.readInt32BE(0)).toBe(bytes.length);
        const d = new FrontendDecoder();
        d.push(bytes);
        expect(d.drain()).toEqual([m]);
        d.end();
        expect(decodeStartupPacket(bytes)).toEqual(m);
      }),
      RUNS,
    );
    expect(seen.size).toBe(4);
  });

  it('typed frontend messages, after a StartupMessage', () => {
    const seen = new Set<string>();
    const startup = encodeFrontend({ type: 'StartupMessage', protocolVersion: 196608, parameters: { user: 'u' } });
    fc.assert(
      fc.property(typedFrontend, (m) => {
        seen.add(m.type);
        const bytes = encodeFrontend(m);
        expect(bytes.readInt32BE(1)).toBe(bytes.length - 1);
        const d = new FrontendDecoder();
        d.push(Buffer.concat([startup, bytes]));
        const out = d.drain();
        d.end();
        expect(out.slice(1)).toEqual([m]);
        expect(decodeFrontendMessage(bytes)).toEqual(m);
      }),
      { numRuns: 4000 },
    );
    expect(seen.size).toBe(14);
  });

  it("'p' messages, with the decoder told which authentication is in progress", () => {
    const seen = new Set<string>();
    fc.assert(
      fc.property(authResponse, ({ kind, message }) => {
        seen.add(message.type);
        const bytes = encodeFrontend(message);
        expect(bytes[0]).toBe(0x70);
        const d = new FrontendDecoder({ startup: false, authentication: kind });
        d.push(bytes);
        expect(d.drain()).toEqual([message]);
        expect(decodeFrontendMessage(bytes, kind)).toEqual(message);
        // Without a hint the same bytes are a generic AuthenticationResponse of the body.
        expect(decodeFrontendMessage(bytes)).toEqual({ type: 'AuthenticationResponse', data: bytes.subarray(5) });
      }),
      RUNS,
    );
    expect(seen.size).toBe(4);
  });

  it('the typed-frontend and auth generators together cover every typed frontend type', () => {
    const types = new Set<string>();
    fc.sample(typedFrontend, 3000).forEach((m) => types.add(m.type));
    fc.sample(authResponse, 300).forEach((m) => types.add(m.message.type));
    fc.sample(startupPacket, 300).forEach((m) => types.add(m.type));
    expect([...types].sort()).toEqual([...ALL_FRONTEND_TYPES].sort());
  });
});
