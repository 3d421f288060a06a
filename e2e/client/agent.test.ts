// `quicpool connect`'s engine, the QuicAgent, between real clients and a real pooler in front of
// the run's Postgres: psql (-c, a script with \copy), pgbench (-i, simple/extended/prepared with
// -j = -c, -C), node-postgres and postgres.js over the TCP port and the unix socket, and a cancel
// of pg_sleep from the local client. SSLRequest is answered 'N' (libpq's sslmode=prefer asks).
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeFrontend, encodeStartupPacket, MessageType, PROTOCOL_3_0, SQLSTATE } from '@quicpool/wire';
import { QuicTicketStore } from '@quicpool/transport';
import { createTestDatabase, dropTestDatabase, untilQueryRunning, withPgClient } from '@quicpool/pg-fixture';
import { pgInfo, scramLogin, startQuicPooler, trustLogin, until } from './helpers.js';
import type { TestPooler } from './helpers.js';
import { failedTransactions, pgbench, processedTransactions, psql, runLibpq, startAgent } from './agent-helpers.js';
import type { TestAgent } from './agent-helpers.js';

let pooler: TestPooler;
let agent: TestAgent;
let work: string;

beforeAll(async () => {
  pooler = await startQuicPooler({ poolSize: 8 });
  agent = await startAgent(pooler.endpoint, { sessions: { maxConnections: 2, streamsPerConnection: 50 } });
  work = await mkdtemp(join(tmpdir(), 'qp-agent-work-'));
});
afterAll(async () => {
  await agent?.close();
  await pooler?.close();
  if (work !== undefined) await rm(work, { recursive: true, force: true });
});

const tcp = (): string[] => ['-h', '127.0.0.1', '-p', String(agent.port)];

describe('psql through the agent', () => {
  it('runs -c over TCP (SSLRequest answered N) and over the unix socket', async () => {
    expect(await runLibpq(psql, [...tcp(), '-Atc', 'select 40 + 2'])).toBe('42\n');
    expect(await runLibpq(psql, ['-h', agent.socketDir, '-p', String(agent.port), '-Atc', "select 'unix'"])).toBe('unix\n');
    expect(agent.agent.stats().encryptionDeclined).toBeGreaterThan(0);
  });

  it('runs a script with \\copy in and out', async () => {
    const input = join(work, 'in.csv');
    const output = join(work, 'out.csv');
    await writeFile(input, Array.from({ length: 500 }, (_, i) => `${i},row ${i}`).join('\n') + '\n');
    const script = join(work, 'copy.sql');
    await writeFile(script, [
      'create temp table agent_copy (id int, label text);',
      `\\copy agent_copy from '${input}' with (format csv)`,
      'select count(*), sum(id) from agent_copy;',
      `\\copy (select * from agent_copy order by id) to '${output}' with (format csv)`,
    ].join('\n') + '\n');
    // One transaction (-1): the temp table lives on one backend under transaction pooling.
    const out = await runLibpq(psql, [...tcp(), '-v', 'ON_ERROR_STOP=1', '-1', '-At', '-f', script]);
    expect(out).toContain('500|124750');
    expect((await readFile(output, 'utf8')).split('\n')[499]).toBe('499,row 499');
  });
});

describe('pgbench through the agent', () => {
  // pgbench's tables have fixed names: this file's are in a database of its own (another file
  // initializes pgbench at the same time).
  const DB = 'qp_pgbench_agent';
  const bench = (args: string[]): Promise<string> => runLibpq(pgbench, [...tcp(), ...args], { PGDATABASE: DB });
  beforeAll(() => createTestDatabase(pgInfo, DB));
  afterAll(() => dropTestDatabase(pgInfo, DB));

  it('initializes, then runs simple, extended and prepared with -j = -c, and -C, with no failure', async () => {
    await bench(['-i', '-s', '1', '-q']);
    for (const mode of ['simple', 'extended', 'prepared']) {
      const out = await bench(['-M', mode, '-c', '4', '-j', '4', '-t', '20', '-S']);
      expect(failedTransactions(out), out).toBe(0);
      expect(processedTransactions(out), out).toBe(80);
    }
    const out = await bench(['-C', '-c', '4', '-j', '4', '-t', '10', '-S']);
    expect(failedTransactions(out), out).toBe(0);
    expect(processedTransactions(out), out).toBe(40);
    const s = agent.agent.stats();
    expect(s.manager.connections).toBeLessThanOrEqual(2);
    expect(s.sessions).toBeGreaterThanOrEqual(40);
  });
});

describe('drivers through the agent', () => {
  it('node-postgres over TCP and over the unix socket', async () => {
    for (const host of ['127.0.0.1', agent.socketDir]) {
      const c = new pg.Client({ ...scramLogin, host, port: agent.port });
      await c.connect();
      const r = await c.query<{ n: number }>('select $1::int * 2 as n', [21]);
      expect(r.rows[0]?.n).toBe(42);
      await c.end();
    }
  });

  it('postgres.js over TCP and over the unix socket', async () => {
    for (const host of ['127.0.0.1', agent.socketDir]) {
      const sql = postgres({ ...scramLogin, username: scramLogin.user, host, port: agent.port, max: 2, ssl: false, onnotice: () => undefined });
      const rows = await sql<{ n: number }[]>`select ${20}::int + 22 as n`;
      expect(rows[0]?.n).toBe(42);
      await sql.end({ timeout: 5 });
    }
  });
});

describe('a client that ends before its startup packet', () => {
  it('gets no bytes back and no refusal: the agent closes in silence, as PostgreSQL does', async () => {
    const events: string[] = [];
    const onEvent = (e: { type: string }): void => void events.push(e.type);
    agent.agent.on('event', onEvent);
    try {
      const received = await new Promise<number>((resolve, reject) => {
        let n = 0;
        const s = createConnection({ host: '127.0.0.1', port: agent.port }, () => s.end(encodeFrontend({ type: 'Terminate' })));
        s.on('data', (b: Buffer) => (n += b.length)).on('error', reject).on('close', () => resolve(n));
      });
      expect(received).toBe(0);
      // node-postgres: connect() and end() at once sends Terminate before the StartupMessage.
      const c = new pg.Client({ ...scramLogin, host: '127.0.0.1', port: agent.port });
      const errors: Error[] = [];
      c.on('error', (e) => errors.push(e));
      // (pg settles neither way the connect() that end() interrupted, against PostgreSQL too.)
      void c.connect().catch(() => undefined);
      await c.end();
      expect(errors).toEqual([]);
      expect(events).not.toContain('refused');
    } finally {
      agent.agent.off('event', onEvent);
    }
  });
});

describe('cancel through the agent', () => {
  it('cancels pg_sleep from the local client (a CancelRequest on a fresh stream)', async () => {
    const sql = postgres({ ...scramLogin, username: scramLogin.user, host: '127.0.0.1', port: agent.port, max: 1, ssl: false });
    await sql`select 1`;
    const before = agent.agent.stats().cancels;
    // A text of its own (the server is shared), seen running before the cancel goes: a
    // CancelRequest that arrives before the backend reads its query is ignored, and it sleeps on.
    const text = 'select pg_sleep(30) as cancelled_through_the_agent';
    const q = sql.unsafe(text).execute();
    await withPgClient({ host: pgInfo.host, port: pgInfo.port, ...scramLogin }, (c) => untilQueryRunning(c, text));
    q.cancel(); // postgres.js: a new connection to the agent carrying the CancelRequest
    const err = await q.then(() => null, (e: Error & { code?: string }) => e);
    expect(err?.code).toBe(SQLSTATE.QUERY_CANCELED);
    expect(agent.agent.stats().cancels).toBe(before + 1);
    expect((await sql<{ one: number }[]>`select 1 as one`)[0]?.one).toBe(1);
    await sql.end({ timeout: 5 });
  });
});

describe('startup pipelined', () => {
  it('an agent started again with the ticket store of the last one sends its first StartupMessage in 0-RTT early data', async () => {
    const tickets = new QuicTicketStore();
    const first = await startAgent(pooler.endpoint, { sessions: { tickets } });
    const second = await (async () => {
      try {
        const c = new pg.Client({ ...trustLogin, host: '127.0.0.1', port: first.port });
        await c.connect();
        await c.query('select 1');
        await c.end();
        expect(first.agent.stats().earlyStartups).toBe(0); // a full handshake: nothing to resume
      } finally {
        await first.close();
      }
      return startAgent(pooler.endpoint, { sessions: { tickets } });
    })();
    try {
      const c = new pg.Client({ ...trustLogin, host: '127.0.0.1', port: second.port });
      await c.connect();
      expect((await c.query<{ n: number }>('select 5 as n')).rows[0]?.n).toBe(5);
      await c.end();
      const s = second.agent.stats();
      expect(s.earlyStartups).toBe(1);
      expect(s.manager.resumptions).toBe(1);
    } finally {
      await second.close();
    }
  });
});

describe('backpressure', () => {
  it('a local client that does not read stops the stream (not the agent\'s memory); reading again gets every byte', async () => {
    const rows = 20_000;
    const rowBytes = 1_000;
    const before = agent.agent.stats();
    const sock = createConnection({ host: '127.0.0.1', port: agent.port });
    await new Promise<void>((r) => sock.once('connect', () => r()));
    sock.pause(); // read nothing for now
    sock.write(encodeStartupPacket({ type: 'StartupMessage', protocolVersion: PROTOCOL_3_0, parameters: { user: trustLogin.user, database: trustLogin.database } }));
    sock.write(encodeFrontend({ type: 'Query', query: `select repeat('x', ${rowBytes}) from generate_series(1, ${rows})` }));
    await until(() => agent.agent.stats().pausedDown > before.pausedDown, 10_000);
    // While the client reads nothing, the agent has taken in only a small part of the ~20 MB result.
    expect(agent.agent.stats().bytesDown - before.bytesDown).toBeLessThan((rows * rowBytes) / 2);
    let received = 0;
    // Walk the backend messages (type, Int32 length): the second ReadyForQuery ends the answer
    // (the first one ends the login).
    let pending: Buffer = Buffer.alloc(0);
    let readyForQuery = 0;
    const done = new Promise<void>((resolve) => {
      sock.on('data', (b: Buffer) => {
        received += b.length;
        pending = pending.length === 0 ? b : Buffer.concat([pending, b]);
        while (pending.length >= 5) {
          const length = pending.readInt32BE(1);
          if (pending.length < 1 + length) break;
          if (pending[0] === MessageType.ReadyForQuery && ++readyForQuery === 2) resolve();
          pending = pending.subarray(1 + length);
        }
      });
    });
    sock.resume();
    await done;
    expect(received).toBeGreaterThan(rows * rowBytes);
    sock.end(encodeFrontend({ type: 'Terminate' }));
    await new Promise<void>((r) => sock.once('close', () => r()));
  });
});
