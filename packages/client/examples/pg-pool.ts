// 1. Swap pg.Pool for QuicPool: the same API (query, connect/release, events, end), so code and
// libraries built on pg.Pool (Drizzle, Kysely, Knex) keep working.
import { QuicPool } from '@quicpool/client';
import type { ExampleSettings } from './settings.js';

export async function poolExample(s: ExampleSettings): Promise<{ answer: number; inserted: number }> {
  const pool = new QuicPool({
    user: s.user, password: s.password, database: s.database, max: 20, // ordinary pg.Pool options
    quic: { endpoints: s.endpoints, ca: s.ca, serverName: s.serverName, maxConnections: 4, streamsPerConnection: 100 },
  });
  pool.on('error', (err) => console.error('idle client lost', err)); // as with pg.Pool
  try {
    const { rows } = await pool.query('select $1::int + 1 as answer', [41]);

    const client = await pool.connect(); // transactions as usual
    let inserted = 0;
    try {
      await client.query('begin');
      await client.query('create temp table t (id int) on commit drop');
      inserted = (await client.query('insert into t values (1), (2)')).rowCount ?? 0;
      await client.query('commit');
    } finally {
      client.release();
    }
    console.log(pool.sessions?.stats()); // QUIC counters: connections, streams in use, waits ...
    return { answer: rows[0].answer, inserted };
  } finally {
    await pool.end();
  }
}
