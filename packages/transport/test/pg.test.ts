// node-postgres through every transport against a real Postgres (the fixture's), via a trivial
// forwarder: one backend socket per accepted session stream, bytes piped both ways. Proves the
// session streams are good enough for a real driver, and how a driver is handed one (README).
import net from 'node:net';
import type { Duplex } from 'node:stream';
import type { PgConnectionInfo } from '@quicpool/pg-fixture';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { DevCertificates, SessionListener, SessionStream } from '../src/index.js';
import {
  createMemoryPair,
  dialTcp,
  dialTls,
  forNodePostgres,
  generateDevCertificates,
  listenTcp,
  listenTls,
  QuicDialer,
  QuicListener,
  upgradeToTls,
} from '../src/index.js';
import { readBytes } from './helpers.js';

const SSL_REQUEST_CODE = 80877103;

/** Pipes a session stream to a fresh backend connection; either side ending/failing ends both. */
function forward(stream: Duplex, backend: PgConnectionInfo): void {
  const socket = net.connect({ host: backend.host, port: backend.port, noDelay: true });
  const abort = (): void => {
    stream.destroy();
    socket.destroy();
  };
  stream.on('error', abort);
  socket.on('error', abort);
  stream.pipe(socket);
  socket.pipe(stream);
}

/** Like forward(), but first answers an SSLRequest with 'S' and upgrades to TLS, as the pooler will. */
async function forwardWithSslRequest(stream: SessionStream, backend: PgConnectionInfo, certs: DevCertificates): Promise<void> {
  const first = await readBytes(stream, 8);
  expect(first.readUInt32BE(4)).toBe(SSL_REQUEST_CODE);
  stream.write('S');
  const secure = await upgradeToTls(stream, { cert: certs.certPem, key: certs.keyPem });
  forward(secure, backend);
}

/** The checks every transport must pass: queries, a transaction, an error the session survives. */
async function exercise(client: pg.Client): Promise<void> {
  await client.connect();
  const sum = await client.query<{ n: number }>('SELECT 1 + 1 AS n');
  expect(sum.rows).toEqual([{ n: 2 }]);
  const series = await client.query<{ x: number }>('SELECT x FROM generate_series(1, 1000) AS x');
  expect(series.rowCount).toBe(1000);

  await client.query('CREATE TEMP TABLE t (v int)');
  await client.query('BEGIN');
  await client.query('INSERT INTO t VALUES ($1), ($2)', [1, 2]);
  expect((await client.query('SELECT count(*)::int AS c FROM t')).rows).toEqual([{ c: 2 }]);
  await client.query('ROLLBACK');
  expect((await client.query('SELECT count(*)::int AS c FROM t')).rows).toEqual([{ c: 0 }]);

  await expect(client.query('SELECT 1 / 0')).rejects.toMatchObject({ code: '22012' });
  expect((await client.query('SELECT 42 AS answer')).rows).toEqual([{ answer: 42 }]);
  await client.end();
}

describe('node-postgres over session streams', () => {
  const backend = inject('pg');
  let certs: DevCertificates;
  let tcp: SessionListener;
  let tls: SessionListener;
  let sslRequest: SessionListener;

  beforeAll(async () => {
    certs = await generateDevCertificates();
    tcp = await listenTcp();
    tcp.onSession((stream) => forward(stream, backend));
    tls = await listenTls({ cert: certs.certPem, key: certs.keyPem });
    tls.onSession((stream) => forward(stream, backend));
    sslRequest = await listenTcp();
    sslRequest.onSession((stream) => {
      forwardWithSslRequest(stream, backend, certs).catch(() => stream.destroy());
    });
  });
  afterAll(async () => {
    await Promise.all([tcp.close(), tls.close(), sslRequest.close()]);
  });

  const config = { user: backend.user, password: backend.password, database: backend.database };

  it('tcp: pg takes an opened TCP session stream (SCRAM)', async () => {
    const stream = await dialTcp({ host: '127.0.0.1', port: tcp.address().port });
    await exercise(new pg.Client({ ...config, stream: () => forNodePostgres(stream) }));
    expect(stream.destroyed).toBe(true);
  });

  it('tls: pg takes an opened TLS session stream, without its own ssl option', async () => {
    const stream = await dialTls({ host: 'localhost', port: tls.address().port, ca: certs.caPem });
    expect(stream.info.tls?.alpnProtocol).toBe('postgresql');
    await exercise(new pg.Client({ ...config, stream: () => forNodePostgres(stream) }));
  });

  it('memory: pg over an in-memory pair (trust user)', async () => {
    const [client, server] = createMemoryPair();
    forward(server, backend);
    await exercise(
      new pg.Client({ user: backend.trustUser, database: backend.database, stream: () => forNodePostgres(client) }),
    );
  });

  it('quic: pg takes a QUIC session stream the same way (one stream = one session)', async () => {
    const listener = await QuicListener.listen({ cert: certs.certPem, key: certs.keyPem, host: '127.0.0.1', port: 0 });
    listener.onSession((stream) => forward(stream, backend));
    const dialer = new QuicDialer({ host: '127.0.0.1', port: listener.address().port, serverName: 'localhost', ca: certs.caPem });
    try {
      const streams = await Promise.all([dialer.open(), dialer.open()]);
      // Two sessions multiplexed over one connection, used concurrently.
      await Promise.all(streams.map((stream) => exercise(new pg.Client({ ...config, stream: () => forNodePostgres(stream) }))));
    } finally {
      await dialer.close();
      await listener.close();
    }
  });

  it("pg's own SSLRequest + TLS path, answered by upgradeToTls", async () => {
    await exercise(
      new pg.Client({
        ...config,
        host: 'localhost',
        port: sslRequest.address().port,
        ssl: { ca: certs.caPem, servername: 'localhost' },
      }),
    );
  });

  it('a session reset mid-query fails the query with ECONNRESET', async () => {
    let session: SessionStream | undefined;
    const own = await listenTcp();
    own.onSession((stream) => {
      session = stream;
      forward(stream, backend);
    });
    const stream = await dialTcp({ host: '127.0.0.1', port: own.address().port });
    const client = new pg.Client({ ...config, stream: () => forNodePostgres(stream) });
    client.on('error', () => {});
    await client.connect();
    const slow = client.query('SELECT pg_sleep(1)');
    await new Promise((r) => setTimeout(r, 50));
    session?.destroy(new Error('pooler aborted the session'));
    await expect(slow).rejects.toMatchObject({ code: 'ECONNRESET' });
    await own.close();
  });
});
