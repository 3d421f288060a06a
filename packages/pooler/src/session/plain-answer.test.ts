import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeBackend } from '@quicpool/wire';
import type { BackendMessage } from '@quicpool/wire';
import { isPlainAnswer } from './plain-answer.js';

const MESSAGES: readonly BackendMessage[] = [
  { type: 'RowDescription', fields: [{ name: 'a', tableOid: 0, columnAttributeNumber: 0, dataTypeOid: 23, dataTypeSize: 4, typeModifier: -1, format: 0 }] },
  { type: 'DataRow', values: [Buffer.from('1')] },
  { type: 'CommandComplete', tag: 'SELECT 1' },
  { type: 'CommandComplete', tag: 'COMMIT' },
  { type: 'CommandComplete', tag: 'RESET' },
  { type: 'CommandComplete', tag: 'DISCARD ALL' },
  { type: 'CommandComplete', tag: 'DEALLOCATE ALL' },
  { type: 'NoticeResponse', fields: { S: 'WARNING', C: '25P01', M: 'there is no transaction in progress' } },
  { type: 'ErrorResponse', fields: { S: 'ERROR', C: '22012', M: 'division by zero' } },
  { type: 'ParameterStatus', name: 'application_name', value: 'x' },
  { type: 'EmptyQueryResponse' },
  { type: 'ReadyForQuery', status: 'I' },
  { type: 'ReadyForQuery', status: 'T' },
  { type: 'ReadyForQuery', status: 'E' },
];

/** What the lane may take, by the messages themselves. */
function model(ms: readonly BackendMessage[]): boolean {
  const last = ms.at(-1);
  if (last?.type !== 'ReadyForQuery' || last.status !== 'I') return false;
  return ms.slice(0, -1).every(
    (m) => m.type === 'RowDescription' || m.type === 'DataRow' || m.type === 'NoticeResponse' || (m.type === 'CommandComplete' && !/^[RD]/.test(m.tag)),
  );
}

describe('isPlainAnswer', () => {
  it('takes whole forwarded messages ending in ReadyForQuery I, and nothing else', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...MESSAGES), { maxLength: 8 }), fc.nat(40), fc.nat(16), (ms, cut, slack) => {
        const encoded = ms.map((m) => encodeBackend(m));
        const bytes = Buffer.concat(encoded);
        // In a larger read buffer (the lane reads only `length` bytes of it).
        const chunk = Buffer.concat([bytes, Buffer.alloc(slack, 0x5a)]);
        expect(isPlainAnswer(chunk, bytes.length)).toBe(model(ms));
        // A read that ends early is what its whole messages are, and never plain inside a message.
        const length = Math.max(0, bytes.length - cut);
        let whole = 0;
        for (let n = 0; whole < ms.length && n + encoded[whole]!.length <= length; whole++) n += encoded[whole]!.length;
        const atBoundary = Buffer.concat(encoded.slice(0, whole)).length === length;
        expect(isPlainAnswer(chunk, length)).toBe(atBoundary && model(ms.slice(0, whole)));
      }),
    );
  });

  it('refuses a malformed length', () => {
    const ready = encodeBackend({ type: 'ReadyForQuery', status: 'I' });
    const bad = Buffer.from(ready);
    bad.writeInt32BE(3, 1);
    expect(isPlainAnswer(bad, bad.length)).toBe(false);
    const long = Buffer.from(ready);
    long.writeInt32BE(6, 1); // a ReadyForQuery of two status bytes
    expect(isPlainAnswer(Buffer.concat([long, Buffer.from('I')]), long.length + 1)).toBe(false);
  });
});
