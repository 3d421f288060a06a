// The same pooler serving sessions from TLS (SSLRequest upgrade) and in-memory streams.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryPair, forNodePostgres, generateDevCertificates, listenTcp } from '@quicpool/transport';
import type { SessionListener, SessionStream } from '@quicpool/transport';
import { createPooler } from '../support/create-pooler.js';
import type { Pooler } from '../../src/index.js';
import { pgInfo, rejection, untilNoClients, withClient } from '../support/pooler-helpers.js';

/** A listener whose sessions are memory pairs opened by `dial()`. */
function memoryListener(): SessionListener & { dial(): SessionStream } {
  let handler: ((s: SessionStream) => void) | null = null;
  const open = new Set<SessionStream>();
  return {
    kind: 'memory',
    address: () => ({ address: 'memory', port: 0 }),
    onSession: (h) => {
      handler = h;
    },
    close: async () => {
      for (const s of open) s.destroy();
    },
    dial(): SessionStream {
      const [client, server] = createMemoryPair();
      open.add(server);
      server.once('close', () => open.delete(server));
      handler?.(server);
      return client;
    },
  };
}

let pooler: Pooler;
let tcpPort: number;
let ca: string;
const memory = memoryListener();

beforeAll(async () => {
  const certs = await generateDevCertificates();
  ca = certs.caPem;
  pooler = createPooler({
    server: { host: pgInfo.host, port: pgInfo.port },
    users: { [pgInfo.user]: { password: pgInfo.password }, [pgInfo.md5User]: { password: pgInfo.md5Password, auth: 'md5' } },
    tls: { cert: certs.certPem, key: certs.keyPem },
    pool: { poolSize: 1 },
  });
  const tcp = await listenTcp();
  tcpPort = tcp.address().port;
  pooler.listen(tcp);
  pooler.listen(memory);
});
afterAll(async () => {
  await pooler.close({ graceful: false });
});

const base = () => ({ host: 'localhost', port: tcpPort, database: pgInfo.database, user: pgInfo.user, password: pgInfo.password });

describe('TLS after SSLRequest', () => {
  it('upgrades with a verified certificate and allows md5 over TLS', async () => {
    await withClient({ ...base(), ssl: { ca, servername: 'localhost' } }, async (c) => {
      expect((await c.query('select 1 as x')).rows[0].x).toBe(1);
    });
    await withClient({ ...base(), ssl: { ca }, user: pgInfo.md5User, password: pgInfo.md5Password }, async (c) => {
      expect((await c.query('select current_user as u')).rows[0].u).toBe(pgInfo.md5User);
    });
    // The same md5 user on plain TCP is refused.
    expect((await rejection(withClient({ ...base(), user: pgInfo.md5User, password: pgInfo.md5Password }, async () => undefined))).code).toBe('28000');
  });
});

describe('in-memory session streams', () => {
  it('serve queries, and a stream reset mid-transaction leaves the backend clean', async () => {
    await untilNoClients(pooler);
    const clientStream = memory.dial();
    const a = new pg.Client({ ...base(), stream: () => forNodePostgres(clientStream) });
    a.on('error', () => undefined);
    await a.connect();
    const pid = (await a.query('select pg_backend_pid() as pid')).rows[0].pid as number;
    await a.query('begin');
    await a.query('create temp table gone (x int)');
    clientStream.destroy(new Error('stream reset'));
    await untilNoClients(pooler);
    const b = new pg.Client({ ...base(), stream: () => forNodePostgres(memory.dial()) });
    await b.connect();
    try {
      expect((await b.query('select pg_backend_pid() as pid')).rows[0].pid).toBe(pid);
      expect((await b.query(`select to_regclass('pg_temp.gone') as t`)).rows[0].t).toBeNull();
    } finally {
      await b.end();
      await a.end().catch(() => undefined);
    }
  });
});
