// Two workers in one pooler (two cores sharing the daemon-wide counts and the peer channel, as a
// daemon's worker threads do): one server budget for both (pool.size and maxServerConnections,
// checked in pg_stat_activity), a CancelRequest that lands on the other worker cancels the right
// query and a wrong key nothing, over TCP and QUIC.
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, dropTestDatabase } from '@quicpool/pg-fixture';
import { generateDevCertificates, listenTcp, QuicDialer, QuicListener } from '@quicpool/transport';
import { createPooler } from '../../src/index.js';
import type { Pooler } from '../../src/index.js';
import { countingBackends, pgInfo, rejection, untilRunning } from '../support/pooler-helpers.js';
import { quicClients, socketClients } from '../support/transport-clients.js';

const DB = 'qp_workers';
let pooler: Pooler | null = null;

beforeAll(() => createTestDatabase(pgInfo, DB));
afterAll(() => dropTestDatabase(pgInfo, DB));
afterEach(async () => {
  await pooler?.close({ graceful: false });
  pooler = null;
});

async function start(pool: { poolSize: number; queryWaitTimeoutMs?: number }, extra: { maxServerConnections?: number; users?: Record<string, { password: string }> } = {}): Promise<number> {
  pooler = createPooler(
    {
      server: { host: pgInfo.host, port: pgInfo.port },
      users: { [pgInfo.user]: { password: pgInfo.password }, ...extra.users },
      pool: { queryWaitTimeoutMs: 20_000, ...pool },
      ...(extra.maxServerConnections !== undefined ? { maxServerConnections: extra.maxServerConnections } : {}),
    },
    { workers: 2 },
  );
  const tcp = await listenTcp({ host: '127.0.0.1', port: 0 });
  pooler.listen(tcp);
  return tcp.address().port;
}

const client = async (port: number, database = DB, user = pgInfo.user): Promise<pg.Client> => {
  const c = new pg.Client({ host: '127.0.0.1', port, database, user, password: pgInfo.password });
  c.on('error', () => undefined);
  await c.connect();
  return c;
};

describe('one server budget for two workers', () => {
  it('pool.size = 5, 40 clients in transaction mode: never more than 5 server connections, every transaction completes', async () => {
    const port = await start({ poolSize: 5 });
    const clients = await Promise.all(Array.from({ length: 40 }, () => client(port)));
    try {
      const workers = new Set(pooler!.view().clients.map((c) => c.worker));
      expect(workers).toEqual(new Set([0, 1])); // the clients are spread over both workers
      const { result, most } = await countingBackends(DB, pgInfo.user, () =>
        Promise.all(
          clients.map(async (c, i) => {
            let done = 0;
            for (let t = 0; t < 15; t++) {
              await c.query('begin');
              const r = await c.query('select $1::int as i, pg_backend_pid() as pid', [i]);
              expect(r.rows[0].i).toBe(i);
              await c.query('commit');
              done++;
            }
            return done;
          }),
        ),
      );
      expect(result.reduce((a, b) => a + b, 0)).toBe(40 * 15);
      expect(most).toBeGreaterThan(0);
      expect(most).toBeLessThanOrEqual(5);
      // Both workers served transactions with connections of the one budget.
      const pool = pooler!.view().pools.find((p) => p.database === DB)!;
      expect(pool.xactCountTotal).toBe(40 * 15);
      expect(pool.idle + pool.active + pool.resetting + pool.connecting).toBeLessThanOrEqual(5);
    } finally {
      await Promise.all(clients.map((c) => c.end()));
    }
  });

  it('a worker whose clients wait gets the connections the other holds idle', async () => {
    const port = await start({ poolSize: 2 });
    // New sessions go to the least busy worker: a, c on worker 0, b, d on worker 1.
    const [a, b, c, d] = await Promise.all([0, 1, 2, 3].map(async (i) => {
      await new Promise((r) => setTimeout(r, i * 30));
      return client(port);
    }));
    try {
      expect(pooler!.view().clients.map((x) => x.worker).sort()).toEqual([0, 0, 1, 1]);
      // One transaction on each worker: each holds one of the two connections, then idle.
      await Promise.all([a!.query('select 1'), b!.query('select 1')]);
      const perWorker = (w: number): number => pooler!.view().servers.filter((s) => s.database === DB && s.worker === w).length;
      expect([perWorker(0), perWorker(1)]).toEqual([1, 1]);
      // Two at once on worker 1: it gets worker 0's idle connection.
      const { most } = await countingBackends(DB, pgInfo.user, () => Promise.all([b!.query('select pg_sleep(0.2)'), d!.query('select pg_sleep(0.2)')]));
      expect(most).toBeLessThanOrEqual(2);
      expect([perWorker(0), perWorker(1)]).toEqual([0, 2]);
    } finally {
      await Promise.all([a, b, c, d].map((x) => x!.end()));
    }
  });

  it('maxServerConnections holds over all pools of both workers; idle connections of another pool make room', async () => {
    const port = await start({ poolSize: 10 }, { maxServerConnections: 3 });
    const others = await Promise.all(Array.from({ length: 3 }, () => client(port, pgInfo.database)));
    try {
      // Three connections to the fixture's database, now idle: the daemon's whole allowance.
      await Promise.all(others.map((c) => c.query('select pg_sleep(0.05)')));
      const mine = await Promise.all(Array.from({ length: 6 }, () => client(port)));
      try {
        const { result, most } = await countingBackends(DB, pgInfo.user, () => Promise.all(mine.map((c) => c.query('select 1 as one'))));
        expect(result.every((r) => r.rows[0].one === 1)).toBe(true);
        expect(most).toBeLessThanOrEqual(3);
        const servers = pooler!.view().servers;
        expect(servers.length).toBeLessThanOrEqual(3);
        expect(servers.some((s) => s.database === DB)).toBe(true);
      } finally {
        await Promise.all(mine.map((c) => c.end()));
      }
    } finally {
      await Promise.all(others.map((c) => c.end()));
    }
  });
});

describe('a CancelRequest that lands on the other worker', () => {
  for (const via of ['TCP', 'QUIC'] as const) {
    it(`cancels the query of the session it names over ${via}, and a wrong key cancels nothing`, async () => {
      const port = await start({ poolSize: 4 });
      let clients = socketClients('TCP', port);
      let dialer: QuicDialer | null = null;
      let cancelDialer: QuicDialer | null = null;
      if (via === 'QUIC') {
        const certs = await generateDevCertificates({ names: ['localhost'] });
        const quic = await QuicListener.listen({ cert: certs.certPem, key: certs.keyPem, host: '127.0.0.1', port: 0 });
        pooler!.listen(quic);
        const opts = { host: '127.0.0.1', port: quic.address().port, serverName: 'localhost', ca: certs.caPem };
        dialer = new QuicDialer(opts);
        // A second QUIC connection: its streams go to the other worker (the least busy one).
        cancelDialer = new QuicDialer(opts);
        clients = quicClients(dialer);
      }
      try {
        const a = await clients.client({ database: DB });
        const sql = `select pg_sleep(10) -- cancelled from the other worker over ${via}`;
        const failed = rejection(a.query(sql));
        await untilRunning(sql);
        const [row] = pooler!.view().clients;
        expect(row?.worker).toBe(0);
        // A wrong secret: nothing is cancelled (the query is still running afterwards).
        const key = (a as unknown as { processID: number; secretKey: number });
        await rawCancel(via === 'QUIC' ? quicClients(cancelDialer!) : clients, key.processID, key.secretKey ^ 1);
        await untilRunning(sql);
        expect(pooler!.stats().cancelsForwardedTotal).toBe(0);
        // The right key, sent on a session of the other worker.
        const sessionsBefore = pooler!.stats().cancelRequestsTotal;
        await rawCancel(via === 'QUIC' ? quicClients(cancelDialer!) : clients, key.processID, key.secretKey);
        expect((await failed).code).toBe('57014');
        expect(pooler!.stats().cancelRequestsTotal).toBe(sessionsBefore + 1);
        expect(pooler!.stats().cancelsForwardedTotal).toBe(1);
        expect((await a.query('select 1 as ok')).rows[0].ok).toBe(1);
        await a.end();
      } finally {
        await dialer?.close({ graceful: false });
        await cancelDialer?.close({ graceful: false });
      }
    });
  }
});

/** Sends a CancelRequest with (processId, secret) on a new session and waits for the pooler to close it. */
async function rawCancel(clients: ReturnType<typeof socketClients>, processId: number, secretKey: number): Promise<void> {
  const c = await clients.canceller();
  const target = Object.assign(new pg.Client(), { processID: processId, secretKey });
  c.cancel(target, null); // null: the target's active query (it has none), so pg sends the request
  // pg sends the CancelRequest on a connection of its own, which the pooler closes when done.
  await new Promise<void>((resolve) => {
    const conn = (c as unknown as { connection: NodeJS.EventEmitter }).connection;
    conn.once('end', () => resolve());
    conn.once('close', () => resolve());
  });
}

