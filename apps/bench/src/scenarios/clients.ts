// The client variants, built inside the client process from their JSON spec: node-postgres
// sessions over TCP (TLS after SSLRequest, as psql and pg do) or over QUIC streams of
// @quicpool/client, all behind the same session pool, queue bound and deadlines; and the three
// connect-per-request clients, which open a session for every query and close it after the row.
import type { ClientConfig } from 'pg';
import pg from 'pg';
import { pgStream, QuicClient, SessionManager, StartupHints } from '@quicpool/client';
import type { SessionManagerOptions } from '@quicpool/client';
import { QuicTicketStore } from '@quicpool/transport';
import { openPgSession } from '../load/pg-session.js';
import { PooledVariant } from '../load/session-pool.js';
import type { ClientVariant } from '../load/variant.js';
import { QueryRejected } from '../load/variant.js';
import type { ClientSpec } from './types.js';

/** Where the client connects, and how it logs in. */
export interface ClientTarget {
  readonly host: string;
  readonly port: number;
  /** The daemon's development CA; null: no TLS (straight to Postgres). */
  readonly caPem: string | null;
  readonly serverName: string;
  readonly user: string;
  readonly password: string;
  readonly database: string;
  /** quiche's congestion control on the client side (the same as the server's). */
  readonly congestionControl: 'cubic' | 'reno' | 'bbr';
}

/** Connect-per-request clients refuse beyond this many sessions in flight (an overload bound). */
const MAX_CONNECTING = 500;

function login(t: ClientTarget): ClientConfig {
  return { user: t.user, password: t.password, database: t.database };
}

function managerOptions(t: ClientTarget, extra: Partial<SessionManagerOptions>): SessionManagerOptions {
  if (t.caPem === null) throw new Error('QUIC needs the daemon certificate authority');
  return {
    endpoints: [{ host: t.host, port: t.port, serverName: t.serverName }],
    ca: t.caPem,
    idleTimeoutMs: 0,
    acquireTimeoutMs: 120_000,
    connectTimeoutMs: 20_000,
    quic: { congestionControl: t.congestionControl },
    ...extra,
  };
}

/** A variant whose every query is a whole session: open, one query, close (after the row). */
function perRequest(name: string, run: (sql: string) => Promise<() => Promise<void>>, opened: () => Promise<void>, closed: () => Promise<void>, info: () => Record<string, number>): ClientVariant & { info: () => Record<string, number> } {
  let inFlight = 0;
  const closing = new Set<Promise<void>>();
  return {
    name,
    sessions: 0,
    open: opened,
    info,
    async query(sql: string): Promise<void> {
      if (inFlight >= MAX_CONNECTING) throw new QueryRejected('queue-full');
      inFlight++;
      try {
        const close = await run(sql);
        // The close is not part of the time to the first row; it runs on.
        const p = close().catch(() => undefined).finally(() => closing.delete(p));
        closing.add(p);
      } finally {
        inFlight--;
      }
    },
    async close(): Promise<void> {
      await Promise.allSettled([...closing]);
      await closed();
    },
  };
}

async function pgQuery(client: pg.Client, sql: string): Promise<() => Promise<void>> {
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query(sql);
  } catch (error) {
    void client.end().catch(() => undefined);
    throw error;
  }
  return () => client.end();
}

export type BuiltClient = ClientVariant & { info: () => Record<string, number> };

export function buildClient(name: string, spec: ClientSpec, t: ClientTarget): BuiltClient {
  switch (spec.kind) {
    case 'pg': {
      const config: ClientConfig = { ...login(t), host: t.host, port: t.port, ...(spec.tls && t.caPem !== null ? { ssl: { ca: t.caPem, servername: t.serverName } } : {}) };
      const pool = new PooledVariant({ name, sessions: spec.sessions, connectConcurrency: 100, connect: () => openPgSession({ config, prepare: spec.prepare }) });
      return Object.assign(pool, { info: () => ({ connections: spec.sessions }) });
    }
    case 'quic': {
      const manager = new SessionManager(managerOptions(t, { maxConnections: spec.connections, streamsPerConnection: spec.streams }));
      const pool = new PooledVariant({
        name,
        sessions: spec.connections * spec.streams,
        connectConcurrency: 200,
        connect: async () => openPgSession({ config: { ...login(t), stream: await pgStream(manager) }, prepare: spec.prepare }),
      });
      return {
        name,
        sessions: pool.sessions,
        open: () => pool.open(),
        query: (sql, deadline) => pool.query(sql, deadline),
        close: async () => {
          await pool.close();
          await manager.close({ graceful: false });
        },
        info: () => {
          const s = manager.stats();
          return { connections: s.connections, handshakes: s.handshakes, connectionsLost: s.connectionsLost };
        },
      };
    }
    case 'connect-tcp': {
      const ssl = t.caPem === null ? {} : { ssl: { ca: t.caPem, servername: t.serverName } };
      let sessions = 0;
      return perRequest(
        name,
        (sql) => {
          sessions++;
          return pgQuery(new pg.Client({ ...login(t), host: t.host, port: t.port, ...ssl }), sql);
        },
        async () => undefined,
        async () => undefined,
        () => ({ sessions }),
      );
    }
    case 'connect-stream': {
      // One connection, opened before the load; every query opens a new stream on it.
      const manager = new SessionManager(managerOptions(t, { maxConnections: 1, streamsPerConnection: 1000 }));
      return perRequest(
        name,
        (sql) => pgQuery(new QuicClient({ ...login(t), sessions: manager }), sql),
        () => manager.warm(),
        () => manager.close({ graceful: false }),
        () => ({ handshakes: manager.stats().handshakes }),
      );
    }
    case 'connect-0rtt': {
      // What a client keeps between invocations: the newest session ticket and the login hints.
      const tickets = new QuicTicketStore();
      const hints = new StartupHints();
      let connections = 0;
      let resumed = 0;
      const oneShot = async (sql: string): Promise<() => Promise<void>> => {
        const manager = new SessionManager(managerOptions(t, { maxConnections: 1, tickets, startupHints: hints }));
        connections++;
        try {
          const close = await pgQuery(new QuicClient({ ...login(t), sessions: manager }), sql);
          if (manager.stats().resumptions > 0) resumed++;
          return async () => {
            await close();
            await manager.close({ graceful: false });
          };
        } catch (error) {
          void manager.close({ graceful: false });
          throw error;
        }
      };
      return perRequest(
        name,
        oneShot,
        async () => {
          // A first connection (not measured) leaves the ticket every later one resumes with.
          const close = await oneShot('select 1');
          for (let waited = 0; tickets.size === 0 && waited < 3_000; waited += 20) await new Promise((r) => setTimeout(r, 20));
          await close();
          if (tickets.size === 0) throw new Error('the daemon sent no session ticket: 0-RTT cannot run');
          connections = 0;
          resumed = 0;
        },
        async () => undefined,
        () => ({ connections, resumed }),
      );
    }
    default: {
      const never: never = spec;
      throw new Error(`unknown client ${JSON.stringify(never)}`);
    }
  }
}
