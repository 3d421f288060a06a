// Faults on the client side of the pooler: a client's TCP socket closed mid-transaction, a QUIC
// stream reset mid-transaction, and a QUIC connection carrying 40 busy sessions lost, both by an
// abrupt close and by the peer vanishing (silence until the idle timeout). Each time: the lost
// sessions' transactions are rolled back, the other sessions commit with their own state, no
// backend is left behind (pooler and pg_stat_activity agree, nothing idle in transaction), and a
// new client is served.
import type net from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forNodePostgres, generateDevCertificates, listenTcp, QuicDialer, QuicListener } from '@quicpool/transport';
import type { SessionStream } from '@quicpool/transport';
import { createPooler } from '../support/create-pooler.js';
import type { Pooler } from '../../src/index.js';
import { pgInfo, withClient } from '../support/pooler-helpers.js';
import { createFaultRole, dropFaultRole, expectNoLeak, superuser, until } from './helpers.js';
import type { FaultRole } from './helpers.js';
import { expectExactlyCommitted, runWorker } from './workers.js';
import type { WorkerOptions, WorkerResult } from './workers.js';
import { startUdpFaultRelay } from '@quicpool/pg-fixture';

const POOL_SIZE = 10;
/** The listener's QUIC idle timeout: how long a vanished peer holds its sessions. */
const IDLE_MS = 1_500;
let role: FaultRole;
let pooler: Pooler;
let tcpPort: number;
let quic: QuicListener;
let ca: string;

beforeAll(async () => {
  role = await createFaultRole(pgInfo, 'fault_gone');
  const certs = await generateDevCertificates({ names: ['localhost'] });
  ca = certs.caPem;
  pooler = createPooler({
    server: { host: pgInfo.host, port: pgInfo.port },
    users: { [role.user]: { password: role.password } },
    pool: { poolSize: POOL_SIZE, queryWaitTimeoutMs: 20_000 },
  });
  const tcp = await listenTcp({ host: '127.0.0.1', port: 0 });
  tcpPort = tcp.address().port;
  quic = await QuicListener.listen({ cert: certs.certPem, key: certs.keyPem, host: '127.0.0.1', port: 0, idleTimeoutMs: IDLE_MS });
  pooler.listen(tcp);
  pooler.listen(quic);
});
afterAll(async () => {
  await pooler.close({ graceful: false });
  await dropFaultRole(pgInfo, role);
});

const login = () => ({ database: pgInfo.database, user: role.user, password: role.password });
const tcpConfig = (): pg.ClientConfig => ({ host: '127.0.0.1', port: tcpPort, ...login() });
const socketOf = (c: pg.Client): net.Socket => (c as unknown as { connection: { stream: net.Socket } }).connection.stream;
const dialer = (port = quic.address().port): QuicDialer =>
  new QuicDialer({ host: '127.0.0.1', port, serverName: 'localhost', ca, keepAliveMs: 300 });

/** pg.Client settings for a new stream of `d`; the stream is remembered under the worker's number. */
function quicConfig(d: QuicDialer, streams?: Map<number, SessionStream>, worker = -1): () => Promise<pg.ClientConfig> {
  return async () => {
    const s = await d.open();
    s.on('error', () => undefined);
    streams?.set(worker, s);
    return { ...login(), stream: () => forNodePostgres(s) };
  };
}

async function truncate(): Promise<void> {
  await superuser(pgInfo, (c) => c.query(`truncate ${role.table}`));
}

const base: WorkerOptions = { transactions: 4, idleInTxMs: 60, sleepS: 0.15 };

function expectOnlyFaulted(results: readonly WorkerResult[], faulted: ReadonlySet<number>): void {
  for (const r of results) {
    if (faulted.has(r.worker)) {
      expect(r.errors.map((e) => e.n)).toEqual([1]);
      expect(r.committed).toEqual([0, 2, 3]); // it reconnected and carried on
    } else {
      expect(r.errors).toEqual([]);
      expect(r.committed).toEqual([0, 1, 2, 3]);
    }
  }
}

describe('a client lost mid-transaction', () => {
  it('TCP: sockets reset mid-query and closed while idle in transaction roll back; nobody else is touched', async () => {
    await truncate();
    const kill = {
      reset: (c: pg.Client) => socketOf(c).resetAndDestroy(),
      close: (c: pg.Client) => socketOf(c).destroy(),
    };
    const faults = new Map<number, WorkerOptions['fault']>([
      [0, { n: 1, during: 'query', inject: kill.reset }],
      [1, { n: 1, during: 'query', inject: kill.close }],
      [2, { n: 1, during: 'idle', inject: kill.reset }],
      [3, { n: 1, during: 'idle', inject: kill.close }],
    ]);
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => {
      const fault = faults.get(i);
      return runWorker(i, tcpConfig, role, fault === undefined ? base : { ...base, fault });
    }));
    expectOnlyFaulted(results, new Set(faults.keys()));
    await withClient(tcpConfig(), (c) => expectExactlyCommitted(c, role, results));
    await expectNoLeak(pgInfo, pooler, role.user, POOL_SIZE);
    await withClient(tcpConfig(), async (c) => {
      expect((await c.query(`select current_setting('app.who', true) as v`)).rows[0].v ?? '').toBe('');
    });
  }, 30_000);

  it('QUIC: streams reset mid-query and while idle in transaction roll back; the other streams of the connection carry on', async () => {
    await truncate();
    const d = dialer();
    const streams = new Map<number, SessionStream>();
    const reset = (worker: number) => () => streams.get(worker)!.destroy(new Error('test: stream reset'));
    const faults = new Map<number, WorkerOptions['fault']>([
      [0, { n: 1, during: 'query', inject: reset(0) }],
      [1, { n: 1, during: 'query', inject: reset(1) }],
      [2, { n: 1, during: 'idle', inject: reset(2) }],
      [3, { n: 1, during: 'idle', inject: reset(3) }],
    ]);
    try {
      const results = await Promise.all(Array.from({ length: 12 }, (_, i) => {
        const fault = faults.get(i);
        return runWorker(i, quicConfig(d, streams, i), role, fault === undefined ? base : { ...base, fault });
      }));
      expectOnlyFaulted(results, new Set(faults.keys()));
      expect((await d.stats()).handshakes).toBe(1); // one connection throughout: resets are per stream
      await withClient(tcpConfig(), (c) => expectExactlyCommitted(c, role, results));
      await expectNoLeak(pgInfo, pooler, role.user, POOL_SIZE);
    } finally {
      await d.close();
    }
  }, 30_000);
});

describe('a QUIC connection with 40 busy sessions lost', () => {
  const busy: WorkerOptions = { transactions: 400, idleInTxMs: 10, sleepS: 0.02, stopOnError: true };

  async function loseConnection(how: 'abrupt close' | 'peer vanishes'): Promise<void> {
    await truncate();
    const relay = how === 'peer vanishes' ? await startUdpFaultRelay({ host: '127.0.0.1', port: quic.address().port }) : null;
    const d = dialer(relay?.port);
    try {
      const load = Array.from({ length: 40 }, (_, i) => runWorker(i, quicConfig(d), role, busy));
      await until('40 sessions and commits', async () => pooler.stats().clients === 40
        && (await superuser(pgInfo, (c) => c.query(`select count(*)::int as n from ${role.table}`))).rows[0].n >= 40, 10_000);
      if (relay !== null) relay.blackhole = true;
      else await d.close({ graceful: false });
      const results = await Promise.all(load);
      // Every session fails (none hangs) ...
      for (const r of results) {
        expect(r.errors).toHaveLength(1);
        expect(r.committed.length).toBeLessThan(busy.transactions);
      }
      // ... and for the reason of the loss: the endpoint's close, or the client's idle timeout
      // (silence: the connection is declared dead by the timer, not by an error of ours).
      const expected = how === 'abrupt close' ? { code: 'ECONNABORTED' } : { code: 'ETIMEDOUT', message: 'QUIC connection idle timeout' };
      for (const r of results) expect(r.errors[0]).toMatchObject(expected);
      // The pooler saw the connection go, rolled back and released every backend.
      await expectNoLeak(pgInfo, pooler, role.user, POOL_SIZE, IDLE_MS + 5_000);
      await until('the listener forgot the connection', () => quic.stats().connections === 0 && quic.stats().streams === 0, IDLE_MS + 3_000);
      await withClient(tcpConfig(), (c) => expectExactlyCommitted(c, role, results));
    } finally {
      await d.close({ graceful: false }).catch(() => undefined);
      await relay?.close();
    }
    // A new QUIC client is served at once.
    const fresh = dialer();
    try {
      const again = await runWorker(1000, quicConfig(fresh), role, { transactions: 2, idleInTxMs: 0, sleepS: 0 });
      expect(again.errors).toEqual([]);
      await expectNoLeak(pgInfo, pooler, role.user, POOL_SIZE);
    } finally {
      await fresh.close();
    }
  }

  it('abrupt close: every session ends, every backend comes back clean', () => loseConnection('abrupt close'), 30_000);
  it('peer vanishes: the idle timeout ends its sessions on both sides, every backend comes back clean', () => loseConnection('peer vanishes'), 30_000);
});
