// Fast start through the agent: the agent checks the local client itself (a local password list
// here), logs in to the pooler with its certificate, and answers the startup at once from what the
// pooler answered the same StartupMessage last time; the StartupMessage and the client's first
// query then leave together and the pooler's own login answer is absorbed. Against a real pooler
// and a real Postgres: psql, pgbench -C (simple, extended, prepared) and a node-postgres
// connect-per-query loop give what they give straight against Postgres; a value that changed
// since the last login reaches the client as ParameterStatus; a login the pooler refuses reaches
// the client as its FATAL with its SQLSTATE; a cancel sent before the pooler's key is known is held
// and cancels the right query; after an agent restart the first SELECT is answered from 0-RTT
// early data while the handshake is still unconfirmed, and an INSERT waits for confirmation.
import { randomBytes } from 'node:crypto';
import { createConnection } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeStartupPacket, SQLSTATE } from '@quicpool/wire';
import { generateDevCertificates, QuicListener, QuicTicketStore } from '@quicpool/transport';
import type { DevCertificates } from '@quicpool/transport';
import { createPooler } from '@quicpool/pooler';
import type { Pooler } from '@quicpool/pooler';
import { LoginCache } from '@quicpool/client';
import { createTestDatabase, dropTestDatabase, withPgClient } from '@quicpool/pg-fixture';
import { devCerts, pgInfo, rejection, until } from './helpers.js';
import { failedTransactions, pgbench, processedTransactions, psql, runLibpq, startAgent } from './agent-helpers.js';
import type { TestAgent } from './agent-helpers.js';
import { startUdpRelay } from './udp-relay.js';

const LOCAL_PASSWORD = 'local-secret';
let agentCert: DevCertificates;
let unmapped: DevCertificates;
let pooler: Pooler;
let listener: QuicListener;
let endpoint: string;
const direct = { host: pgInfo.host, port: pgInfo.port, user: pgInfo.user, password: pgInfo.password, database: pgInfo.database };

beforeAll(async () => {
  const server = await devCerts();
  [agentCert, unmapped] = await Promise.all([
    generateDevCertificates({ names: ['agent-1'], caName: 'agents CA 1' }),
    generateDevCertificates({ names: ['agent-9'], caName: 'agents CA 9' }),
  ]);
  pooler = createPooler({
    server: { host: pgInfo.host, port: pgInfo.port },
    users: { [pgInfo.user]: { auth: 'cert', certCommonNames: ['agent-1'], serverPassword: pgInfo.password } },
    pool: { poolSize: 6, queryWaitTimeoutMs: 20_000 },
    earlyData: 'read-only',
  });
  listener = await QuicListener.listen({
    cert: server.certPem, key: server.keyPem, host: '127.0.0.1', port: 0, ticketKey: randomBytes(48),
    clientCa: `${agentCert.caPem.trim()}\n${unmapped.caPem.trim()}\n`,
  });
  pooler.listen(listener);
  endpoint = `127.0.0.1:${listener.address().port}`;
});
afterAll(async () => {
  await listener?.close({ graceful: false });
  await pooler?.close({ graceful: false });
});

/** An agent that checks local clients with a password and logs in with `cert` (fast start: 'auto'). */
function fastAgent(o: { cert?: DevCertificates; endpoint?: string; loginCache?: LoginCache; tickets?: QuicTicketStore; minConnections?: number } = {}): Promise<TestAgent> {
  const c = o.cert ?? agentCert;
  return startAgent(o.endpoint ?? endpoint, {
    sessions: { cert: c.certPem, key: c.keyPem, ...(o.tickets !== undefined ? { tickets: o.tickets } : {}), ...(o.minConnections !== undefined ? { minConnections: o.minConnections } : {}) },
    agent: { localChecks: { tcp: 'password', passwords: { [pgInfo.user]: LOCAL_PASSWORD } }, ...(o.loginCache !== undefined ? { loginCache: o.loginCache } : {}) },
  });
}

const local = (a: TestAgent, extra: pg.ClientConfig = {}): pg.ClientConfig => ({ host: '127.0.0.1', port: a.port, user: pgInfo.user, password: LOCAL_PASSWORD, database: pgInfo.database, ...extra });

const QUERY = "select $1::int * 2 as n, current_user as u, current_setting('application_name') as app, current_setting('DateStyle') as ds";

async function connectPerQuery(config: pg.ClientConfig, n: number): Promise<unknown[]> {
  const out: unknown[] = [];
  for (let i = 0; i < n; i++) {
    const c = new pg.Client(config);
    await c.connect();
    out.push((await c.query(QUERY, [i])).rows[0]);
    await c.end();
  }
  return out;
}

describe('fast start through the agent', () => {
  it('node-postgres, a new connection per query: the same answers as straight to Postgres; every session after the first fast-started', async () => {
    const a = await fastAgent();
    try {
      const through = await connectPerQuery(local(a, { application_name: 'fast-loop' }), 12);
      expect(through).toEqual(await connectPerQuery({ ...direct, application_name: 'fast-loop' }, 12));
      const s = a.agent.stats();
      expect(s.localLogins).toBe(12);
      expect(s.fastStarts).toBe(11); // the first login is learned the long way
      expect(s.fastStartsRefused).toBe(0);
    } finally {
      await a.close();
    }
  });

  it('psql: the same output as straight to Postgres', async () => {
    const a = await fastAgent();
    try {
      const sql = "select current_user, current_setting('application_name'), 6 * 7; select string_agg(g::text, ',') from generate_series(1, 5) g";
      const viaAgent: string[] = [];
      for (let i = 0; i < 3; i++) viaAgent.push(await runLibpq(psql, ['-h', '127.0.0.1', '-p', String(a.port), '-Atc', sql], { PGPASSWORD: LOCAL_PASSWORD }));
      const straight = await runLibpq(psql, ['-h', pgInfo.host, '-p', String(pgInfo.port), '-Atc', sql]);
      expect(viaAgent).toEqual([straight, straight, straight]);
      expect(a.agent.stats().fastStarts).toBe(2);
    } finally {
      await a.close();
    }
  });

  describe('pgbench -C', () => {
    const DB = 'qp_pgbench_fast_start';
    beforeAll(async () => {
      await createTestDatabase(pgInfo, DB);
      await runLibpq(pgbench, ['-h', pgInfo.host, '-p', String(pgInfo.port), '-i', '-s', '1', '-q'], { PGDATABASE: DB });
    });
    afterAll(() => dropTestDatabase(pgInfo, DB));

    it('simple, extended and prepared: every transaction on a fast-started session, none failed', async () => {
      const a = await fastAgent();
      try {
        for (const mode of ['simple', 'extended', 'prepared']) {
          const before = a.agent.stats().fastStarts;
          const out = await runLibpq(pgbench, ['-h', '127.0.0.1', '-p', String(a.port), '-C', '-M', mode, '-S', '-c', '4', '-j', '2', '-t', '10'], { PGDATABASE: DB, PGPASSWORD: LOCAL_PASSWORD });
          expect(failedTransactions(out), out).toBe(0);
          expect(processedTransactions(out), out).toBe(40);
          // pgbench opens one connection per client to start with, then one per transaction.
          expect(a.agent.stats().fastStarts - before).toBeGreaterThanOrEqual(40);
        }
      } finally {
        await a.close();
      }
    });
  });

  it('a value that changed since the last login reaches the client as ParameterStatus', async () => {
    const cache = new LoginCache();
    const a = await fastAgent({ loginCache: cache });
    try {
      await connectPerQuery(local(a), 1); // learned
      expect(cache.size).toBe(1);
      const [key, record] = [...cache.entries()][0]!;
      // As if the pooler had reported another DateStyle last time: the agent announces that one.
      cache.set(key, { ...record, parameters: record.parameters.map(([n, v]) => [n, n === 'DateStyle' ? 'SQL, DMY' : v] as const) });
      const seen: string[] = [];
      const c = new pg.Client(local(a));
      const connection = (c as unknown as { connection: { on(e: 'parameterStatus', f: (m: { parameterName: string; parameterValue: string }) => void): void } }).connection;
      connection.on('parameterStatus', (m) => {
        if (m.parameterName === 'DateStyle') seen.push(m.parameterValue);
      });
      await c.connect();
      const r = await c.query<{ ds: string }>("select current_setting('DateStyle') as ds");
      await c.end();
      expect(seen).toEqual(['SQL, DMY', r.rows[0]!.ds]); // announced by the agent, then the pooler's
      expect(r.rows[0]!.ds).not.toBe('SQL, DMY');
      expect(new Map([...cache.entries()][0]![1].parameters).get('DateStyle')).toBe(r.rows[0]!.ds); // learned again
      expect(a.agent.stats().fastStarts).toBe(1);
    } finally {
      await a.close();
    }
  });

  it('a login the pooler refuses reaches the client as its FATAL with its SQLSTATE, in place of the first answer', async () => {
    const cache = new LoginCache();
    const mapped = await fastAgent({ loginCache: cache });
    await connectPerQuery(local(mapped), 1).finally(() => mapped.close());
    // Same StartupMessage, a certificate the pooler does not map to the user: the agent still
    // answers at once (it vouches for the client), the pooler refuses with 28000.
    const wrong = await fastAgent({ cert: unmapped, loginCache: cache });
    try {
      const c = new pg.Client(local(wrong));
      await c.connect();
      const err = await rejection(c.query('select 1'));
      expect(err.code).toBe(SQLSTATE.INVALID_AUTHORIZATION_SPECIFICATION);
      expect((err as { severity?: string }).severity).toBe('FATAL');
      await c.end().catch(() => undefined);
      expect(wrong.agent.stats().fastStartsRefused).toBe(1);
      expect(cache.size).toBe(0); // forgotten: the next login takes the long way and is refused there
      const again = await rejection(new pg.Client(local(wrong)).connect());
      expect(again.code).toBe(SQLSTATE.INVALID_AUTHORIZATION_SPECIFICATION);
      expect(wrong.agent.stats().fastStarts).toBe(1);
    } finally {
      await wrong.close();
    }
  });

  it('a database dropped since the last login: the client gets its 3D000', async () => {
    const DB = 'qp_fast_start_gone';
    await createTestDatabase(pgInfo, DB);
    const a = await fastAgent();
    try {
      await connectPerQuery(local(a, { database: DB }), 1);
      await withPgClient(direct, (c) => c.query(`drop database ${DB} with (force)`));
      const c = new pg.Client(local(a, { database: DB }));
      c.on('error', () => undefined);
      await c.connect();
      const err = await rejection(c.query('select 1'));
      expect(err.code).toBe(SQLSTATE.INVALID_CATALOG_NAME);
      await c.end().catch(() => undefined);
      expect(a.agent.stats().fastStarts).toBe(1);
    } finally {
      await a.close();
      await dropTestDatabase(pgInfo, DB);
    }
  });

  it('a cancel sent before the pooler\'s key is known waits for it and cancels the right query', async () => {
    // The pooler's datagrams reach the agent 300 ms late: the client has the agent's answer (and
    // key) at once, its query is on its way, and its cancel comes long before the pooler's key.
    const relay = await startUdpRelay({ host: '127.0.0.1', port: listener.address().port }, { downDelayMs: 0 });
    const a = await fastAgent({ endpoint: `127.0.0.1:${relay.port}` });
    try {
      await connectPerQuery(local(a), 1); // learned
      relay.downDelayMs = 300;
      const c = new pg.Client(local(a));
      await c.connect();
      const running = c.query('select pg_sleep(30)');
      const { processID, secretKey } = c as unknown as { processID: number; secretKey: number };
      const cancel = createConnection({ host: '127.0.0.1', port: a.port });
      cancel.on('connect', () => cancel.write(encodeStartupPacket({ type: 'CancelRequest', processId: processID, secretKey: int32(secretKey) })));
      await until(() => a.agent.stats().cancelsHeld === 1);
      const err = await rejection(running);
      expect(err.code).toBe(SQLSTATE.QUERY_CANCELED);
      expect((await c.query<{ n: number }>('select 7 as n')).rows[0]!.n).toBe(7);
      await c.end();
      cancel.destroy();
    } finally {
      await a.close();
      await relay.close();
    }
  }, 20_000);
});

const int32 = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};

describe('fast start after an agent restart (0-RTT)', () => {
  const TABLE = 'e2e_fast_start_early';
  beforeAll(() => withPgClient(direct, (c) => c.query(`drop table if exists ${TABLE}; create table ${TABLE} (x int); grant all on ${TABLE} to public`)));
  afterAll(() => withPgClient(direct, (c) => c.query(`drop table if exists ${TABLE}`)));

  it('the first SELECT of a new session is answered before the handshake is confirmed; an INSERT waits for confirmation', async () => {
    const tickets = new QuicTicketStore();
    const cache = new LoginCache();
    const relay = await startUdpRelay({ host: '127.0.0.1', port: listener.address().port }, { downDelayMs: 0 });
    const via = `127.0.0.1:${relay.port}`;
    try {
      const first = await fastAgent({ endpoint: via, tickets, loginCache: cache });
      await connectPerQuery(local(first), 1).finally(() => first.close());
      await until(() => tickets.size === 1);

      // Started again: nothing open, a ticket and the login cache from the last run. The relay
      // holds the agent's handshake Finished (and every 1-RTT packet) until released.
      relay.hold();
      // The pooler's handshake answer comes 1 s late: both local sessions' first bytes are written
      // before the agent has 1-RTT keys, so they ride in 0-RTT packets, which the relay lets through.
      relay.downDelayMs = 1_000;
      const a = await fastAgent({ endpoint: via, tickets, loginCache: cache, minConnections: 0 });
      try {
        const writer = new pg.Client(local(a));
        await writer.connect(); // answered by the agent
        const up = a.agent.stats().bytesUp;
        const insert = `insert into ${TABLE} values (1)`;
        const inserted = writer.query(insert);
        await until(() => a.agent.stats().bytesUp >= up + insert.length); // on its way, in 0-RTT
        const reader = new pg.Client(local(a));
        await reader.connect();
        // Sent after the INSERT on the same connection, answered from early data: the pooler has
        // the INSERT by now, and has not run it.
        expect((await reader.query('select 42 as n')).rows[0]).toEqual({ n: 42 });
        expect(relay.held).toBeGreaterThan(0);
        expect(a.agent.stats().earlyStartups).toBe(2);
        expect(await rowCount()).toBe(0);
        relay.downDelayMs = 0;
        relay.release();
        await inserted;
        expect(await rowCount()).toBe(1);
        await reader.end();
        await writer.end();
        expect(a.agent.stats().fastStarts).toBe(2);
      } finally {
        relay.release();
        await a.close();
      }
    } finally {
      await relay.close();
    }
  }, 30_000);

  const rowCount = (): Promise<number> => withPgClient(direct, async (c) => (await c.query<{ n: number }>(`select count(*)::int as n from ${TABLE}`)).rows[0]!.n);
});
