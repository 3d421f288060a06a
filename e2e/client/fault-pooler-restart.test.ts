// Fault: the pooler restarted under load (a new process on the same ports with the same ticket
// key, as a deploy does). QUIC clients (QuicPool over a SessionManager) and TCP clients (pg.Pool)
// see their in-flight queries fail, reconnect by themselves and carry on; the QUIC client comes
// back on a new connection resumed with 0-RTT from the ticket it kept. Every committed row is
// there exactly once and tagged by its own worker; the old pooler's backends are all gone and the
// new one's match pg_stat_activity.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenTcp, QuicListener, QuicTicketStore } from '@quicpool/transport';
import { createPooler } from '@quicpool/pooler';
import type { Pooler } from '@quicpool/pooler';
import { QuicPool } from '@quicpool/client';
import { devCerts, pgInfo, quicOptions, until } from './helpers.js';
import { createFaultRole, dropFaultRole, expectNoLeak, sleep, superuser } from './fault-helpers.js';
import type { FaultRole } from './fault-helpers.js';

const POOL_SIZE = 8;
const ticketKey = randomBytes(48);
let role: FaultRole;

interface Running {
  pooler: Pooler;
  quic: QuicListener;
  udpPort: number;
  tcpPort: number;
  stop(): Promise<void>;
}

/** A pooler in front of the run's Postgres; ports 0 the first time, the same ports on restart. */
async function startPooler(udpPort = 0, tcpPort = 0): Promise<Running> {
  const certs = await devCerts();
  const pooler = createPooler({
    server: { host: pgInfo.host, port: pgInfo.port },
    users: { [role.user]: { password: role.password } },
    pool: { poolSize: POOL_SIZE, queryWaitTimeoutMs: 20_000 },
  });
  const quic = await QuicListener.listen({ cert: certs.certPem, key: certs.keyPem, host: '127.0.0.1', port: udpPort, ticketKey });
  const tcp = await listenTcp({ host: '127.0.0.1', port: tcpPort });
  pooler.listen(quic);
  pooler.listen(tcp);
  return {
    pooler, quic, udpPort: quic.address().port, tcpPort: tcp.address().port,
    stop: async () => {
      // A crash-like stop: no drain, every session cut.
      await quic.close({ graceful: false });
      await pooler.close({ graceful: false });
    },
  };
}

beforeAll(async () => {
  role = await createFaultRole('fault_prestart');
});
afterAll(async () => {
  await dropFaultRole(role);
});

interface Tally {
  worker: number;
  committed: number[];
  /** COMMIT sent, answer lost to the restart: Postgres may or may not have committed it. */
  inDoubt: number[];
  errors: string[];
  okAfterRestart: number;
  foreign: string[];
}

const guarded = new WeakSet<pg.PoolClient>();
/** Transactions committed by all workers so far (the restart waits for the load to be running). */
let commits = 0;

/** Commits a worker makes after the restart before it stops. */
const AFTER_RESTART = 3;

/**
 * Transactions until it has committed AFTER_RESTART times after the restart (or `stopAt`, a bound
 * for a pooler that never comes back): insert a tagged row, read the tag back, commit; retry on errors.
 */
async function worker(pool: pg.Pool, worker: number, stopAt: number, restartedAt: () => number): Promise<Tally> {
  const t: Tally = { worker, committed: [], inDoubt: [], errors: [], okAfterRestart: 0, foreign: [] };
  const me = `w${worker}`;
  for (let n = 0; Date.now() < stopAt && t.okAfterRestart < AFTER_RESTART && n < 10_000; n++) {
    let c: pg.PoolClient | null = null;
    let committing = false;
    try {
      c = await pool.connect();
      // A checked-out client's connection error arrives as an 'error' event (pg.Pool listens only
      // while the client is idle); the failing query reports it to us anyway.
      if (!guarded.has(c)) {
        guarded.add(c);
        c.on('error', () => undefined);
      }
      await c.query('begin');
      // SET LOCAL, not set_config(): the pooler pins a backend to a client that calls set_config.
      await c.query(`set local app.who = '${me}'`);
      await c.query(`insert into ${role.table} (worker, n, who) values ($1, $2, current_setting('app.who'))`, [worker, n]);
      const r = await c.query<{ who: string; n: number }>(`select current_setting('app.who') as who, $1::int as n, pg_sleep(0.01)`, [n]);
      if (r.rows[0]?.who !== me || r.rows[0]?.n !== n) t.foreign.push(`${r.rows[0]?.who}/${r.rows[0]?.n}`);
      committing = true;
      await c.query('commit');
      c.release();
      t.committed.push(n);
      commits++;
      if (restartedAt() > 0 && Date.now() > restartedAt()) t.okAfterRestart++;
    } catch (e) {
      c?.release(e as Error); // a broken client is removed from the pool, not reused
      t.errors.push((e as Error & { code?: string }).code ?? (e as Error).message);
      if (committing) t.inDoubt.push(n);
      await sleep(50);
    }
  }
  return t;
}

describe('the pooler restarted under load', () => {
  it('QUIC and TCP clients reconnect and continue; the QUIC client resumes with 0-RTT; nothing leaks', async () => {
    let current = await startPooler();
    const tickets = new QuicTicketStore();
    const login = { user: role.user, password: role.password, database: role.database };
    const quicPool = new QuicPool({
      ...login, max: 12,
      quic: await quicOptions([`127.0.0.1:${current.udpPort}`], {
        tickets, maxConnections: 2, streamsPerConnection: 6, endpointRetryMs: 100,
        // Bounds how long a lost CONNECTION_CLOSE goes unnoticed (transport issue being fixed).
        quic: { idleTimeoutMs: 2_000, keepAliveMs: 300 },
      }),
    });
    const tcpPool = new pg.Pool({ ...login, host: '127.0.0.1', port: current.tcpPort, max: 6 });
    quicPool.on('error', () => undefined);
    tcpPool.on('error', () => undefined);
    let restartedAt = 0;
    try {
      commits = 0;
      // The workers end by themselves once they committed after the restart; this only bounds a failure.
      const stopAt = Date.now() + 22_000;
      const load = [
        ...Array.from({ length: 12 }, (_, i) => worker(quicPool, i, stopAt, () => restartedAt)),
        ...Array.from({ length: 6 }, (_, i) => worker(tcpPool, 100 + i, stopAt, () => restartedAt)),
      ];
      // The load is running on both pools (every worker has committed a few times on average),
      // and the first connection left a session ticket.
      await until(() => commits >= 3 * load.length && tickets.size === 1, 10_000);
      expect(tickets.size).toBe(1);
      const handshakesBefore = quicPool.sessions!.stats().handshakes;
      const old = current;
      await old.stop();
      expect(poolBackendsGone(old.pooler)).toBe(true);
      current = await startPooler(old.udpPort, old.tcpPort);
      restartedAt = Date.now();
      const tallies = await Promise.all(load);

      // Every worker felt the restart at most briefly and committed again afterwards.
      for (const t of tallies) {
        expect(t.foreign).toEqual([]);
        expect(t.okAfterRestart).toBe(AFTER_RESTART);
      }
      expect(tallies.reduce((n, t) => n + t.errors.length, 0)).toBeGreaterThan(0);
      const s = quicPool.sessions!.stats();
      expect(s.connectionsLost).toBeGreaterThanOrEqual(1);
      expect(s.handshakes).toBeGreaterThan(handshakesBefore);
      expect(s.resumptions).toBeGreaterThanOrEqual(1); // the new connection resumed (0-RTT ticket)

      // Exactly the committed transactions (those in doubt may be there or not), each under its own worker.
      const rows = await superuser(async (c) => (await c.query<{ worker: number; n: number; who: string }>(
        `select worker, n, who from ${role.table} order by worker, n`)).rows);
      const doubt = new Set(tallies.flatMap((t) => t.inDoubt.map((n) => `${t.worker}/${n}`)));
      const expected = tallies.flatMap((t) => t.committed.map((n) => ({ worker: t.worker, n, who: `w${t.worker}` })))
        .sort((a, b) => a.worker - b.worker || a.n - b.n);
      expect(rows.filter((r) => !doubt.has(`${r.worker}/${r.n}`))).toEqual(expected);
      for (const r of rows) expect(r.who).toBe(`w${r.worker}`);
    } finally {
      await quicPool.end();
      await tcpPool.end();
    }
    // The old pooler's backends are gone; the new pooler's match Postgres, none in a transaction.
    await expectNoLeak(current.pooler, role.user, POOL_SIZE);
    await current.stop();
    await expectNoLeak(current.pooler, role.user, 0);
  }, 45_000);
});

/** After a forced close the pooler holds no server connection at all. */
function poolBackendsGone(p: Pooler): boolean {
  return p.stats().pools.every((x) => x.idle + x.active + x.resetting === 0);
}
