// What the soak runs against, all on loopback: its own throwaway Postgres, a login role for the
// load (so pg_stat_activity counts exactly the pooler's backends), the pooler in this process on
// TCP and QUIC, and the WAN emulator in front of each (one-way delay, optional UDP loss).
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { startPostgres } from '@quicpool/pg-fixture';
import type { PostgresServer } from '@quicpool/pg-fixture';
import { createPooler } from '@quicpool/pooler';
import type { Pooler } from '@quicpool/pooler';
import { generateDevCertificates, listenTcp, QuicListener } from '@quicpool/transport';
import { startWanEmulator } from '../wan/index.js';
import type { WanEmulator } from '../wan/index.js';

export const SOAK_ROLE = 'soak_load';
export const SOAK_TABLE = 'soak_rows';
/** The pooler's QUIC idle timeout: bounds how long a dropped connection's sessions linger. */
export const QUIC_IDLE_MS = 5_000;

export interface SoakStack {
  readonly pg: PostgresServer;
  readonly pooler: Pooler;
  readonly quic: QuicListener;
  /** In front of the pooler's TCP port. */
  readonly wanTcp: WanEmulator;
  /** In front of the pooler's QUIC port (UDP loss applies here). */
  readonly wanUdp: WanEmulator;
  readonly login: { readonly user: string; readonly password: string; readonly database: string };
  readonly caPem: string;
  /** A direct superuser connection (no pooler, no WAN) for counting and killing backends. */
  readonly monitor: pg.Client;
  close(): Promise<void>;
}

export async function startSoakStack(o: { poolSize: number; delayMs: number; loss: number }): Promise<SoakStack> {
  const server = await startPostgres();
  const password = randomBytes(12).toString('hex');
  const monitor = new pg.Client({ host: server.info.host, port: server.info.port, database: server.info.database, user: server.info.user, password: server.info.password });
  monitor.on('error', () => undefined);
  await monitor.connect();
  await monitor.query(`create role ${SOAK_ROLE} login password '${password}'`);
  await monitor.query(`create table ${SOAK_TABLE} (worker int not null, n int not null, who text not null)`);
  await monitor.query(`grant all on table ${SOAK_TABLE} to ${SOAK_ROLE}`);

  const certs = await generateDevCertificates({ names: ['localhost'] });
  const pooler = createPooler({
    server: { host: server.info.host, port: server.info.port },
    users: { [SOAK_ROLE]: { password } },
    pool: { poolSize: o.poolSize, queryWaitTimeoutMs: 20_000 },
  });
  const tcp = await listenTcp({ host: '127.0.0.1', port: 0 });
  const quic = await QuicListener.listen({ cert: certs.certPem, key: certs.keyPem, host: '127.0.0.1', port: 0, idleTimeoutMs: QUIC_IDLE_MS });
  pooler.listen(tcp);
  pooler.listen(quic);
  // One emulator per protocol (the pooler's TCP and UDP ports differ), same delay both ways.
  const wanTcp = await startWanEmulator({ protocol: 'tcp', targetHost: '127.0.0.1', targetPort: tcp.address().port, delayMs: o.delayMs });
  const wanUdp = await startWanEmulator({
    protocol: 'udp', targetHost: '127.0.0.1', targetPort: quic.address().port, delayMs: o.delayMs, lossRate: o.loss, udpIdleMs: 60_000,
  });
  return {
    pg: server, pooler, quic, wanTcp, wanUdp, caPem: certs.caPem, monitor,
    login: { user: SOAK_ROLE, password, database: server.info.database },
    close: async () => {
      await wanTcp.close();
      await wanUdp.close();
      await pooler.close({ graceful: false });
      await monitor.end().catch(() => undefined);
      await server.stop();
    },
  };
}

/** The soak role's backends as Postgres sees them. */
export async function countBackends(monitor: pg.Client): Promise<number> {
  const r = await monitor.query<{ n: number }>(`select count(*)::int as n from pg_stat_activity where usename = $1 and backend_type = 'client backend'`, [SOAK_ROLE]);
  return r.rows[0]?.n ?? 0;
}
