import { encodeBackend } from '@quicpool/wire';

// The backend byte stream Postgres returns for the workload query over the simple query protocol, `queries`
// times, synthesized in exactly the real shapes (packages/wire/test/postgres.test.ts checks them against a real
// PostgreSQL): RowDescription (one float8 column "trunc"), 10 x DataRow("0".."99"), CommandComplete("SELECT 10"),
// ReadyForQuery('I'). Values come from a seeded generator (xorshift32) so runs compare.
export function selectTruncStream(queries: number): Buffer {
  let s = 1;
  const rand = (): number => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 0x100000000;
  };
  const rowDescription = encodeBackend({
    type: 'RowDescription',
    fields: [
      { name: 'trunc', tableOid: 0, columnAttributeNumber: 0, dataTypeOid: 701, dataTypeSize: 8, typeModifier: -1, format: 0 },
    ],
  });
  const commandComplete = encodeBackend({ type: 'CommandComplete', tag: 'SELECT 10' });
  const readyForQuery = encodeBackend({ type: 'ReadyForQuery', status: 'I' });
  const parts: Buffer[] = [];
  for (let q = 0; q < queries; q++) {
    parts.push(rowDescription);
    for (let i = 0; i < 10; i++) {
      const v = String(Math.trunc(rand() * 100));
      parts.push(encodeBackend({ type: 'DataRow', values: [Buffer.from(v)] }));
    }
    parts.push(commandComplete, readyForQuery);
  }
  return Buffer.concat(parts);
}

/** Messages per query in the stream above. */
export const MESSAGES_PER_QUERY = 13;
