// The client variants, built in the client process from their JSON spec: node-postgres over TCP (TLS after SSLRequest) or
// QUIC streams, behind one session pool, queue bound and deadlines; and three connect-per-request clients (a session a query).
import pg from 'pg';
import { pgStream, QuicClient, SessionManager, StartupHints } from '@quicpool/client';
import type { SessionManagerOptions } from '@quicpool/client';
import { QuicTicketStore } from '@quicpool/transport';
import { openPgSession } from '../load/pg-session.js';
import { PooledVariant } from '../load/session-pool.js';
import type { ClientVariant } from '../load/variant.js';
import { QueryRejected } from '../load/variant.js';
import type { CongestionControl } from '../netpath/netpath.js';
import type { PgTarget } from '../stack/postgres.js';
import type { ClientSpec } from './types.js';

// Where the client connects (the path's end for the pooler, or Postgres itself), and how it logs in. caPem: the daemon's
// development CA (null: no TLS, straight to Postgres); congestionControl: quiche's on the client side (as the server's).
export type ClientTarget = PgTarget & Readonly<{ caPem: string | null; serverName: string; congestionControl: CongestionControl }>;

export type BuiltClient = ClientVariant & { info: () => Record<string, number> };

/** Connect-per-request clients refuse beyond this many sessions in flight (an overload bound). */
const MAX_CONNECTING = 500;

type Action = () => Promise<void>;
const nothing: Action = async () => undefined;

// Each query a whole session: `session` connects, queries and returns its close, which runs after the row (untimed).
function perRequest(name: string, session: (sql: string) => Promise<Action>, o: { info: BuiltClient['info']; open?: Action; close?: Action }): BuiltClient {
  let inFlight = 0;
  const closing = new Set<Promise<void>>();
  return {
    name,
    sessions: 0,
    open: o.open ?? nothing,
    info: o.info,
    async query(sql: string): Promise<void> {
      if (inFlight >= MAX_CONNECTING) throw new QueryRejected('queue-full');
      inFlight++;
      try {
        const close = await session(sql);
        const p = close().catch(() => undefined).finally(() => closing.delete(p));
        closing.add(p);
      } finally {
        inFlight--;
      }
    },
    async close(): Promise<void> {
      await Promise.allSettled([...closing]);
      await (o.close ?? nothing)();
    },
  };
}

/** Connects `client`, runs `sql`; returns its close (then `after`). On failure both run on their own. */
async function pgQuery(client: pg.Client, sql: string, after: Action = nothing): Promise<Action> {
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query(sql);
  } catch (error) {
    void client.end().catch(() => undefined);
    void after();
    throw error;
  }
  return async () => {
    await client.end();
    await after();
  };
}

export function buildClient(name: string, spec: ClientSpec, t: ClientTarget): BuiltClient {
  const login = { user: t.user, password: t.password, database: t.database };
  const tls = t.caPem === null ? {} : { ssl: { ca: t.caPem, servername: t.serverName } };
  const newManager = (extra: Partial<SessionManagerOptions>): SessionManager => {
    if (t.caPem === null) throw new Error('QUIC needs the daemon certificate authority');
    return new SessionManager({
      endpoints: [{ host: t.host, port: t.port, serverName: t.serverName }],
      ca: t.caPem,
      idleTimeoutMs: 0,
      acquireTimeoutMs: 120_000,
      connectTimeoutMs: 20_000,
      quic: { congestionControl: t.congestionControl },
      ...extra,
    });
  };
  switch (spec.kind) {
    case 'pg': {
      const config = { ...login, host: t.host, port: t.port, ...(spec.tls ? tls : {}) };
      const pool = new PooledVariant({ name, sessions: spec.sessions, connectConcurrency: 100, connect: () => openPgSession({ config, prepare: spec.prepare }) });
      return Object.assign(pool, { info: () => ({ connections: spec.sessions }) });
    }
    case 'quic': {
      const manager = newManager({ maxConnections: spec.connections, streamsPerConnection: spec.streams });
      const connect = async () => openPgSession({ config: { ...login, stream: await pgStream(manager) }, prepare: spec.prepare });
      const afterClose = (): Promise<void> => manager.close({ graceful: false });
      return Object.assign(new PooledVariant({ name, sessions: spec.connections * spec.streams, connectConcurrency: 200, connect, afterClose }), {
        info: () => {
          const s = manager.stats();
          return { connections: s.connections, handshakes: s.handshakes, connectionsLost: s.connectionsLost };
        },
      });
    }
    case 'connect-tcp': {
      let sessions = 0;
      const session = (sql: string): Promise<Action> => {
        sessions++;
        return pgQuery(new pg.Client({ ...login, host: t.host, port: t.port, ...tls }), sql);
      };
      return perRequest(name, session, { info: () => ({ sessions }) });
    }
    case 'connect-stream': {
      // One connection, opened before the load; every query opens a new stream on it.
      const manager = newManager({ maxConnections: 1, streamsPerConnection: 1000 });
      return perRequest(name, (sql) => pgQuery(new QuicClient({ ...login, sessions: manager }), sql), {
        open: () => manager.warm(),
        close: () => manager.close({ graceful: false }),
        info: () => ({ handshakes: manager.stats().handshakes }),
      });
    }
    case 'connect-0rtt': {
      // What a client keeps between invocations: the newest session ticket and the login hints.
      const tickets = new QuicTicketStore();
      const hints = new StartupHints();
      let connections = 0;
      let resumed = 0;
      const oneShot = async (sql: string): Promise<Action> => {
        const manager = newManager({ maxConnections: 1, tickets, startupHints: hints });
        connections++;
        const close = await pgQuery(new QuicClient({ ...login, sessions: manager }), sql, () => manager.close({ graceful: false }));
        if (manager.stats().resumptions > 0) resumed++;
        return close;
      };
      const open = async (): Promise<void> => {
        // A first connection (not measured) leaves the ticket every later one resumes with.
        const close = await oneShot('select 1');
        for (let waited = 0; tickets.size === 0 && waited < 3_000; waited += 20) await new Promise((r) => setTimeout(r, 20));
        await close();
        if (tickets.size === 0) throw new Error('the daemon sent no session ticket: 0-RTT cannot run');
        connections = 0;
        resumed = 0;
      };
      return perRequest(name, oneShot, { open, info: () => ({ connections, resumed }) });
    }
  }
}
