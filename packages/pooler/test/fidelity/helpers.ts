// A pooler on TCP and QUIC for the fidelity tests, and real drivers (node-postgres, postgres.js)
// connected to it over either transport.
import net from 'node:net';
import type { Duplex } from 'node:stream';
import pg from 'pg';
import postgres from 'postgres';
import { forNodePostgres, generateDevCertificates, listenTcp, QuicDialer, QuicListener } from '@quicpool/transport';
import { createPooler } from '../support/create-pooler.js';
import type { Pooler, PoolSettings } from '../../src/index.js';
import { pgInfo } from '../support/pooler-helpers.js';

export type Via = 'tcp' | 'quic';

export interface FidelityPooler {
  readonly pooler: Pooler;
  readonly tcpPort: number;
  /** A connected node-postgres client (errors on the client object are ignored). */
  pgClient(via: Via, extra?: pg.ClientConfig): Promise<pg.Client>;
  /** A new connection (TCP) or session stream (QUIC) to the pooler, nothing sent on it yet. */
  open(via: Via): Promise<Duplex>;
  /** A postgres.js instance through the pooler. */
  sql(via: Via, options?: postgres.Options<Record<string, postgres.PostgresType>>): postgres.Sql;
  close(): Promise<void>;
}

export async function startFidelityPooler(pool: Partial<PoolSettings> = {}): Promise<FidelityPooler> {
  const certs = await generateDevCertificates({ names: ['localhost'] });
  const pooler = createPooler({
    server: { host: pgInfo.host, port: pgInfo.port },
    users: { [pgInfo.user]: { password: pgInfo.password }, [pgInfo.trustUser]: { auth: 'trust' } },
    pool: { poolSize: 5, queryWaitTimeoutMs: 30_000, ...pool },
  });
  const tcp = await listenTcp({ host: '127.0.0.1', port: 0 });
  const quic = await QuicListener.listen({ cert: certs.certPem, key: certs.keyPem, host: '127.0.0.1', port: 0 });
  pooler.listen(tcp);
  pooler.listen(quic);
  const tcpPort = tcp.address().port;
  const quicPort = quic.address().port;
  const dialers: QuicDialer[] = [];
  let next = 0;
  /** A few QUIC connections, many streams each. */
  const dialer = (): QuicDialer => {
    if (dialers.length < 4) dialers.push(new QuicDialer({ host: '127.0.0.1', port: quicPort, serverName: 'localhost', ca: certs.caPem }));
    return dialers[next++ % dialers.length]!;
  };
  const base = { database: pgInfo.database, user: pgInfo.user, password: pgInfo.password };
  return {
    pooler,
    tcpPort,
    async pgClient(via, extra = {}) {
      let config: pg.ClientConfig = { ...base, host: '127.0.0.1', port: tcpPort, ...extra };
      if (via === 'quic') {
        const stream = await dialer().open();
        config = { ...base, stream: () => forNodePostgres(stream), ...extra };
      }
      const c = new pg.Client(config);
      c.on('error', () => undefined);
      await c.connect();
      return c;
    },
    async open(via) {
      if (via === 'quic') return dialer().open();
      const s = net.connect({ host: '127.0.0.1', port: tcpPort });
      await new Promise<void>((resolve, reject) => s.once('connect', resolve).once('error', reject));
      return s;
    },
    sql(via, options = {}) {
      const common = { ...base, pass: pgInfo.password, username: pgInfo.user, onnotice: () => undefined, ...options };
      if (via === 'tcp') return postgres({ host: '127.0.0.1', port: tcpPort, ...common });
      // postgres.js takes any Duplex from `socket` (not in its type definitions).
      const withSocket = { ...common, socket: async () => dialer().open() } as postgres.Options<Record<string, postgres.PostgresType>>;
      return postgres(withSocket);
    },
    async close() {
      // Bounded: closing a QUIC connection must not hang a test run.
      await Promise.race([Promise.all(dialers.map((d) => d.close().catch(() => undefined))), new Promise((r) => setTimeout(r, 2000))]);
      await pooler.close({ graceful: false });
    },
  };
}

/** A direct connection to the fixture's Postgres (for checks and pg_terminate_backend). */
export async function directClient(): Promise<pg.Client> {
  const c = new pg.Client({ host: pgInfo.host, port: pgInfo.port, database: pgInfo.database, user: pgInfo.user, password: pgInfo.password });
  c.on('error', () => undefined);
  await c.connect();
  return c;
}
