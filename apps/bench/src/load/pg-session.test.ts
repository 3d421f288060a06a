// Checks, on the wire, that the default variant sends one message batch per query (simple Query)
// and the original-exact one two, in separate round trips (Parse/Describe/Sync, then
// Bind/Execute/Sync after ReadyForQuery), through a TCP relay that records what the client sends.
import { createServer, connect, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import type {} from '@quicpool/pg-fixture';
import { openPgSession } from './pg-session.js';
import { WORKLOAD_SQL } from './variant.js';

const pg = inject('pg');
let relay: Server;
let port = 0;
/** First message type of every chunk the client sent, in order. */
const sent: string[] = [];

beforeAll(async () => {
  relay = createServer((client) => {
    const server = connect(pg.port, pg.host);
    client.on('data', (chunk: Buffer) => {
      sent.push(String.fromCharCode(chunk[0] ?? 0));
      server.write(chunk);
    });
    server.on('data', (chunk: Buffer) => client.write(chunk));
    client.on('close', () => server.destroy());
    server.on('close', () => client.destroy());
    client.on('error', () => server.destroy());
    server.on('error', () => client.destroy());
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  const address = relay.address();
  port = typeof address === 'object' && address !== null ? address.port : 0;
});

afterAll(async () => {
  await new Promise<void>((resolve) => relay.close(() => resolve()));
});

const config = () => ({ host: '127.0.0.1', port, user: pg.user, password: pg.password, database: pg.database });

describe('pg session round trips', () => {
  it('default: one simple Query per query', async () => {
    const session = await openPgSession({ config: config() });
    sent.length = 0;
    await session.query(WORKLOAD_SQL);
    await session.query(WORKLOAD_SQL);
    expect(sent).toEqual(['Q', 'Q']);
    await session.close();
  });

  it('prepare (--original-exact): Parse+Describe+Sync, then Bind+Execute+Sync, per query', async () => {
    const session = await openPgSession({ config: config(), prepare: true });
    sent.length = 0;
    await session.query(WORKLOAD_SQL);
    await session.query(WORKLOAD_SQL);
    expect(sent).toEqual(['P', 'B', 'P', 'B']);
    await session.close();
  });

  it('prepare mode surfaces server errors and stays usable', async () => {
    const session = await openPgSession({ config: config(), prepare: true });
    await expect(session.query('SELECT * FROM no_such_table')).rejects.toThrow(/no_such_table/);
    await expect(session.query(WORKLOAD_SQL)).resolves.toBeUndefined();
    await session.close();
  });
});
