// The wire bench's input: chunks that every decoder can read pass after pass. pg-protocol's Parser
// writes into a chunk it kept when a short chunk follows a partial message (it happened with
// `wire --synthesize --queries 500`: the next pass met "unknown message type 0x00").
import { expect, test } from 'vitest';
import { Parser } from 'pg-protocol/dist/parser.js';
import { selectTruncStream, MESSAGES_PER_QUERY } from './fixture.js';
import { splitChunks } from './measure.js';

test('the short chunk goes first, and the chunks hold the stream in order', () => {
  const stream = Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 251));
  const chunks = splitChunks(stream, 300);
  expect(chunks.map((c) => c.length)).toEqual([100, 300, 300, 300]);
  expect(Buffer.concat(chunks).equals(stream)).toBe(true);
  expect(splitChunks(stream.subarray(0, 900), 300).map((c) => c.length)).toEqual([300, 300, 300]);
});

test("pg-protocol's Parser leaves the chunks as they were, so every pass decodes the same messages", () => {
  for (const queries of [500, 1000, 2500, 4000]) {
    const stream = selectTruncStream(queries);
    const chunks = splitChunks(stream, 65_536);
    for (let pass = 0; pass < 3; pass++) {
      const parser = new Parser();
      let n = 0;
      for (const c of chunks) parser.parse(c, () => void n++);
      expect(n).toBe(queries * MESSAGES_PER_QUERY);
    }
    expect(Buffer.concat(chunks).equals(stream)).toBe(true);
  }
});
