// The driver checklist, run unchanged over TCP, TLS (SSLRequest) and QUIC streams:
// node-postgres Client and Pool, simple and parameterised queries, commit and rollback, errors
// inside a transaction, a 10,000-row result, a 5 MB value both ways, notices, and client.cancel
// (a CancelRequest on its own connection / a fresh QUIC stream) cancelling only its own query.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateDevCertificates, listenTcp, QuicDialer, QuicListener } from '@quicpool/transport';
import { createPooler } from '../support/create-pooler.js';
import type { Pooler } from '../../src/index.js';
import { pgInfo, rejection, untilRunning } from '../support/pooler-helpers.js';
import { quicClients, socketClients } from '../support/transport-clients.js';
import type { TransportClients, TransportName } from '../support/transport-clients.js';

let pooler: Pooler;
let dialer: QuicDialer;
const transports = new Map<TransportName, TransportClients>();

beforeAll(async () => {
  const certs = await generateDevCertificates({ names: ['localhost'] });
  pooler = createPooler({
    server: { host: pgInfo.host, port: pgInfo.port },
    users: { [pgInfo.user]: { password: pgInfo.password } },
    tls: { cert: certs.certPem, key: certs.keyPem },
    pool: { poolSize: 6, queryWaitTimeoutMs: 20_000 },
  });
  const tcp = await listenTcp({ host: '127.0.0.1', port: 0 });
  const quic = await QuicListener.listen({ cert: certs.certPem, key: certs.keyPem, host: '127.0.0.1', port: 0 });
  pooler.listen(tcp);
  pooler.listen(quic);
  dialer = new QuicDialer({ host: '127.0.0.1', port: quic.address().port, serverName: 'localhost', ca: certs.caPem });
  transports.set('TCP', socketClients('TCP', tcp.address().port));
  transports.set('TLS', socketClients('TLS', tcp.address().port, certs.caPem));
  transports.set('QUIC', quicClients(dialer));
  await withT('TCP', (c) => c.query('create table if not exists matrix_test (transport text, n int)'));
});
afterAll(async () => {
  await withT('TCP', (c) => c.query('drop table if exists matrix_test')).catch(() => undefined);
  // Not graceful: cancel streams (pg never ends them) would keep a graceful close waiting.
  await dialer.close({ graceful: false }).catch(() => undefined);
  await pooler.close({ graceful: false });
});

async function withT<T>(name: TransportName, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = await transports.get(name)!.client();
  try {
    return await fn(c);
  } finally {
    await c.end().catch(() => undefined);
  }
}

describe.each(['TCP', 'TLS', 'QUIC'] as const)('node-postgres through the pooler over %s', (name) => {
  it('Client: simple and parameterised queries', async () => {
    await withT(name, async (c) => {
      expect((await c.query('select 1 as one')).rows).toEqual([{ one: 1 }]);
      expect((await c.query('select $1::int + $2::int as sum', [2, 3])).rows).toEqual([{ sum: 5 }]);
      expect((await c.query({ text: 'select $1::text as t, $2::bytea as b', values: ['x', Buffer.from([0, 1, 255])], rowMode: 'array' })).rows)
        .toEqual([['x', Buffer.from([0, 1, 255])]]);
    });
  });

  it('Client: commit, rollback, and an error inside a transaction keep the server SQLSTATE', async () => {
    await withT(name, async (c) => {
      await c.query('begin');
      await c.query('insert into matrix_test values ($1, 1)', [name]);
      await c.query('commit');
      await c.query('begin');
      await c.query('insert into matrix_test values ($1, 2)', [name]);
      await c.query('rollback');
      expect((await c.query('select n from matrix_test where transport = $1', [name])).rows).toEqual([{ n: 1 }]);
      await c.query('begin');
      expect((await rejection(c.query('select 1/0'))).code).toBe('22012');
      expect((await rejection(c.query('select 1'))).code).toBe('25P02');
      await c.query('rollback');
      expect((await rejection(c.query('select * from no_such_table'))).code).toBe('42P01');
      expect((await c.query('select 2 as two')).rows).toEqual([{ two: 2 }]);
    });
  });

  it('Client: a 10,000-row result and a 5 MB value both ways', async () => {
    await withT(name, async (c) => {
      const r = await c.query('select g, md5(g::text) as h from generate_series(1, 10000) g');
      expect(r.rowCount).toBe(10000);
      expect(r.rows[9999]).toMatchObject({ g: 10000 });
      const big = 'q'.repeat(5 * 1024 * 1024);
      const echo = await c.query('select length($1::text) as n, $1::text as v', [big]);
      expect(echo.rows[0].n).toBe(big.length);
      expect(echo.rows[0].v === big).toBe(true);
      const made = await c.query(`select repeat('z', 5 * 1024 * 1024) as v`);
      expect((made.rows[0].v as string).length).toBe(5 * 1024 * 1024);
    });
  });

  it('Client: notices reach the session that caused them, and only it', async () => {
    await withT(name, async (a) => {
      await withT(name, async (b) => {
        const seenA: string[] = [];
        const seenB: string[] = [];
        a.on('notice', (n) => seenA.push(n.message ?? ''));
        b.on('notice', (n) => seenB.push(n.message ?? ''));
        await Promise.all([
          a.query(`do $$ begin raise notice 'for a over %', '${name}'; end $$`),
          b.query('select 1'),
        ]);
        expect(seenA).toEqual([`for a over ${name}`]);
        expect(seenB).toEqual([]);
      });
    });
  });

  it('client.cancel sends a CancelRequest that cancels the running query (57014), and only it', async () => {
    const t = transports.get(name)!;
    await withT(name, async (a) => {
      await withT(name, async (other) => {
        const slowOther = other.query('select pg_sleep(0.5) as s');
        const sleep = `select pg_sleep(10) -- cancelled over ${name}`;
        const slow = a.query(sleep);
        await untilRunning(sleep);
        const before = pooler.stats().cancelsForwardedTotal;
        (await t.canceller()).cancel(a, (a as unknown as { _activeQuery: unknown })._activeQuery);
        expect((await rejection(slow)).code).toBe('57014');
        expect((await slowOther).rows).toHaveLength(1);
        expect((await a.query('select 1 as ok')).rows[0].ok).toBe(1);
        expect(pooler.stats().cancelsForwardedTotal).toBe(before + 1);
      });
    });
  });

  it('Pool: concurrent queries, a checked-out transaction, and an error inside it', async () => {
    const pool = new pg.Pool(transports.get(name)!.poolConfig({ max: 12 }));
    pool.on('error', () => undefined);
    try {
      const rs = await Promise.all(Array.from({ length: 60 }, (_, i) => pool.query('select $1::int as i', [i])));
      expect(rs.map((r) => r.rows[0].i)).toEqual(Array.from({ length: 60 }, (_, i) => i));
      const c = await pool.connect();
      try {
        await c.query('begin');
        await c.query('insert into matrix_test values ($1, 100)', [`pool-${name}`]);
        expect((await rejection(c.query('select 1/0'))).code).toBe('22012');
        await c.query('rollback');
        await c.query('begin');
        await c.query('insert into matrix_test values ($1, 101)', [`pool-${name}`]);
        await c.query('commit');
      } finally {
        c.release();
      }
      expect((await pool.query('select n from matrix_test where transport = $1', [`pool-${name}`])).rows).toEqual([{ n: 101 }]);
      const big = await pool.query('select count(*)::int as n from (select g from generate_series(1, 10000) g) s');
      expect(big.rows[0].n).toBe(10000);
    } finally {
      await pool.end();
    }
  });
});
