// Certificate authentication (Postgres's and PgBouncer's `cert` method): a client certificate
// that verified against the listener's client CA and is mapped to a user (by CN or SHA-256
// fingerprint) logs in as that user with no password round trip, over QUIC and over TLS after an
// SSLRequest. No certificate, an unmapped one, or a user whose map does not list it: FATAL 28000.
// A certificate from a CA nobody trusts never gets past the QUIC handshake. Password users are
// unaffected by certificates.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forNodePostgres, generateDevCertificates, listenTcp, QuicDialer, QuicListener } from '@quicpool/transport';
import type { DevCertificates } from '@quicpool/transport';
import { createPooler } from '../support/create-pooler.js';
import type { Pooler } from '../../src/index.js';
import { pgInfo, rejection } from '../support/pooler-helpers.js';

let server: DevCertificates;
/** Two client certificates from two client CAs (both trusted: the client CA file is a bundle). */
let agent1: DevCertificates;
let agent2: DevCertificates;
let stranger: DevCertificates;
let pooler: Pooler;
let quicPort: number;
let tcpPort: number;
const dialers: QuicDialer[] = [];

beforeAll(async () => {
  [server, agent1, agent2, stranger] = await Promise.all([
    generateDevCertificates({ names: ['localhost'] }),
    generateDevCertificates({ names: ['agent-1'], caName: 'client CA 1' }),
    generateDevCertificates({ names: ['agent-2'], caName: 'client CA 2' }),
    generateDevCertificates({ names: ['agent-1'], caName: 'client CA 1' }),
  ]);
  const clientCa = `${agent1.caPem.trim()}\n${agent2.caPem.trim()}\n`;
  pooler = createPooler({
    server: { host: pgInfo.host, port: pgInfo.port },
    users: {
      [pgInfo.trustUser]: { auth: 'cert', certCommonNames: ['agent-1'] },
      // Mapped by fingerprint (any spelling); logs in to Postgres with its server password.
      [pgInfo.user]: { auth: 'cert', certFingerprints: [agent2.fingerprint.replaceAll(':', '').toLowerCase()], serverPassword: pgInfo.password },
      [pgInfo.md5User]: { password: pgInfo.md5Password },
    },
    tls: { cert: server.certPem, key: server.keyPem, ca: clientCa, requestCert: true, rejectUnauthorized: false },
  });
  const quic = await QuicListener.listen({ cert: server.certPem, key: server.keyPem, clientCa });
  const tcp = await listenTcp({ host: '127.0.0.1', port: 0 });
  pooler.listen(quic);
  pooler.listen(tcp);
  quicPort = quic.address().port;
  tcpPort = tcp.address().port;
});
afterAll(async () => {
  for (const d of dialers) await d.close({ graceful: false });
  await pooler.close({ graceful: false });
});

function dialer(cert?: DevCertificates): QuicDialer {
  const d = new QuicDialer({
    host: '127.0.0.1', port: quicPort, serverName: 'localhost', ca: server.caPem,
    ...(cert !== undefined ? { cert: cert.certPem, key: cert.keyPem } : {}),
  });
  dialers.push(d);
  return d;
}

/** Logs in over a new QUIC stream as `user` (no password unless given) and asks who it is. */
async function quicLogin(d: QuicDialer, user: string, password?: string): Promise<string> {
  const stream = await d.open();
  stream.on('error', () => undefined);
  const c = new pg.Client({ database: pgInfo.database, user, ...(password !== undefined ? { password } : {}), stream: () => forNodePostgres(stream) });
  return whoAmI(c);
}

/** Connects `c`, asks who it is logged in as, always ends it. */
async function whoAmI(c: pg.Client): Promise<string> {
  c.on('error', () => undefined);
  try {
    await c.connect();
    return (await c.query<{ u: string }>('select current_user as u')).rows[0]!.u;
  } finally {
    await c.end().catch(() => undefined);
  }
}

async function tlsLogin(user: string, cert?: DevCertificates): Promise<string> {
  const c = new pg.Client({
    host: '127.0.0.1', port: tcpPort, database: pgInfo.database, user,
    ssl: { ca: server.caPem, servername: 'localhost', ...(cert !== undefined ? { cert: cert.certPem, key: cert.keyPem } : {}) },
  });
  return whoAmI(c);
}

describe('cert authentication over QUIC', () => {
  it('a certificate mapped by CN or by fingerprint logs in without a password', async () => {
    expect(await quicLogin(dialer(agent1), pgInfo.trustUser)).toBe(pgInfo.trustUser);
    expect(await quicLogin(dialer(agent2), pgInfo.user)).toBe(pgInfo.user);
  });

  it('no certificate, an unmapped certificate, or a user not in its map: 28000', async () => {
    const none = await rejection(quicLogin(dialer(), pgInfo.trustUser));
    expect(none.code).toBe('28000');
    expect(none.message).toMatch(/certificate authentication failed .* no verified client certificate/);
    const unmapped = await rejection(quicLogin(dialer(agent2), pgInfo.trustUser));
    expect(unmapped.code).toBe('28000');
    expect(unmapped.message).toMatch(/"agent-2" is not mapped/);
    const otherUser = await rejection(quicLogin(dialer(agent1), pgInfo.user));
    expect(otherUser.code).toBe('28000');
  });

  it('a certificate from an untrusted CA fails the QUIC handshake', async () => {
    const err = await rejection(quicLogin(dialer(stranger), pgInfo.trustUser));
    expect((err as { code?: string }).code).toMatch(/ERR_TLS_CERT|ECONNRESET|ECONNABORTED|ECONNREFUSED/);
  });

  it('password users log in with their password on a connection that has a certificate', async () => {
    expect(await quicLogin(dialer(agent1), pgInfo.md5User, pgInfo.md5Password)).toBe(pgInfo.md5User);
  });
});

describe('cert authentication over TLS (SSLRequest)', () => {
  it('a mapped certificate logs in; without one, or with an untrusted one: 28000', async () => {
    expect(await tlsLogin(pgInfo.trustUser, agent1)).toBe(pgInfo.trustUser);
    expect((await rejection(tlsLogin(pgInfo.trustUser))).code).toBe('28000');
    expect((await rejection(tlsLogin(pgInfo.trustUser, stranger))).code).toBe('28000');
  });
});
