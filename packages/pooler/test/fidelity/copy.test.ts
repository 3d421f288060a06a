// COPY FROM STDIN / TO STDOUT through the pooler in transaction mode (the backend stays attached
// until the COPY ends), 100,000 rows each way, and CopyFail, over TCP and QUIC.
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFidelityPooler } from './helpers.js';
import type { FidelityPooler, Via } from './helpers.js';

let p: FidelityPooler;
beforeAll(async () => {
  p = await startFidelityPooler({ poolSize: 2 });
});
afterAll(async () => p.close());

const ROWS = 100_000;

function* rows(): Generator<string> {
  let batch = '';
  for (let i = 1; i <= ROWS; i++) {
    batch += `${i}\tvalue ${i}\n`;
    if (i % 5000 === 0) {
      yield batch;
      batch = '';
    }
  }
}

describe.each<Via>(['tcp', 'quic'])('COPY over %s', (via) => {
  it('copies 100,000 rows in and out, and CopyFail aborts a COPY cleanly', async () => {
    const sql = p.sql(via, { max: 2 });
    const table = `fid_copy_${via}`;
    try {
      await sql.unsafe(`drop table if exists ${table}; create table ${table} (id int, v text)`);
      await pipeline(Readable.from(rows()), await sql.unsafe(`copy ${table} from stdin`).writable());
      const [count] = await sql.unsafe(`select count(*)::int as n, sum(id)::bigint as s from ${table}`);
      expect(count?.n).toBe(ROWS);
      expect(String(count?.s)).toBe(String((ROWS * (ROWS + 1)) / 2));

      let bytes = 0;
      let lines = 0;
      await pipeline(
        await sql.unsafe(`copy (select * from ${table} order by id) to stdout`).readable(),
        new Writable({
          write(chunk: Buffer, _enc, done) {
            bytes += chunk.length;
            for (const b of chunk) if (b === 10) lines++;
            done();
          },
        }),
      );
      expect(lines).toBe(ROWS);
      expect(bytes).toBeGreaterThan(ROWS * 8);

      // CopyFail: the client aborts; the server answers with an error; nothing is inserted.
      const w = await sql.unsafe(`copy ${table} from stdin`).writable();
      const failed = new Promise<unknown>((resolve) => w.on('error', resolve));
      w.write('1\tpartial\n');
      w.destroy(new Error('client changed its mind'));
      const e = (await failed) as Error;
      expect(e.message).toMatch(/changed its mind/);
      const [after] = await sql.unsafe(`select count(*)::int as n from ${table}`);
      expect(after?.n).toBe(ROWS);
    } finally {
      await sql.unsafe(`drop table if exists ${table}`).catch(() => undefined);
      await sql.end();
    }
  }, 60_000);
});
