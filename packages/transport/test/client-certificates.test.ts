// Client certificates over QUIC and TLS: a server with a client CA asks for one, a certificate
// that verifies shows as `info.tls.peerCertificate` (CN, SANs, SHA-256 fingerprint), a client
// without one still connects (peerCertificate null), and one from another CA is refused. A
// resumed QUIC connection knows the certificate from its ticket while still in 0-RTT.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { DevCertificates, SessionStream } from '../src/index.js';
import { TransportError, canonicalFingerprint256, dialTls, generateDevCertificates, listenTls, peerCertificateFromDer } from '../src/index.js';
import { QuicDialer, QuicListener, QuicTicketStore } from '../src/quic/index.js';
import type { QuicDialerOptions } from '../src/quic/index.js';
import { readAll, waitFor } from './quic-helpers.js';

let server: DevCertificates;
/** The client CA the servers trust, and a client certificate it signed (CN agent-1). */
let client: DevCertificates;
/** A client certificate from a CA nobody trusts. */
let stranger: DevCertificates;

const cleanups: Array<() => Promise<void>> = [];
beforeAll(async () => {
  [server, client, stranger] = await Promise.all([
    generateDevCertificates(),
    generateDevCertificates({ names: ['agent-1', 'agent-1.internal'], caName: 'client CA' }),
    generateDevCertificates({ names: ['agent-1'] }),
  ]);
});
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Seen {
  peer: SessionStream['info']['tls'];
  early: boolean;
}

async function quicServer(ticketKey = randomBytes(48)): Promise<{ port: number; seen: Seen[] }> {
  const listener = await QuicListener.listen({ cert: server.certPem, key: server.keyPem, clientCa: client.caPem, ticketKey });
  const seen: Seen[] = [];
  listener.onSession((s) => {
    s.on('error', () => {});
    seen.push({ peer: s.info.tls, early: s.info.quic?.earlyData ?? false });
    s.pipe(s);
  });
  cleanups.push(() => listener.close({ graceful: false }));
  return { port: listener.address().port, seen };
}

function quicDialer(port: number, o: Partial<QuicDialerOptions> = {}): QuicDialer {
  const d = new QuicDialer({ host: '127.0.0.1', port, serverName: 'localhost', ca: server.caPem, ...o });
  cleanups.push(() => d.close({ graceful: false }));
  return d;
}

async function echo(d: QuicDialer, text: string): Promise<SessionStream> {
  const s = await d.open();
  s.on('error', () => {});
  const reply = readAll(s);
  s.end(text);
  expect((await reply).toString()).toBe(text);
  return s;
}

describe('QUIC', () => {
  test('a client certificate that verifies is shown on the server stream', async () => {
    const { port, seen } = await quicServer();
    const s = await echo(quicDialer(port, { cert: client.certPem, key: client.keyPem }), 'hi');
    const peer = seen[0]?.peer;
    expect(peer?.authorized).toBe(true);
    expect(peer?.peerCertificate).toMatchObject({
      commonName: 'agent-1',
      subjectAltNames: ['DNS:agent-1', 'DNS:agent-1.internal'],
      fingerprint256: client.fingerprint,
    });
    // The client sees the server's certificate.
    expect(s.info.tls?.peerCertificate?.fingerprint256).toBe(server.fingerprint);
  });

  test('a client without a certificate connects; its streams show none', async () => {
    const { port, seen } = await quicServer();
    await echo(quicDialer(port), 'no cert');
    expect(seen[0]?.peer?.authorized).toBe(false);
    expect(seen[0]?.peer?.peerCertificate).toBeNull();
  });

  test('a certificate from an untrusted CA fails the handshake', async () => {
    const { port, seen } = await quicServer();
    const d = quicDialer(port, { cert: stranger.certPem, key: stranger.keyPem });
    const err = await d.open().then(async (s) => {
      s.on('error', () => {});
      s.end('x');
      return readAll(s).then(() => null, (e: unknown) => e);
    }, (e: unknown) => e);
    expect(err).toBeInstanceOf(TransportError);
    expect(seen).toEqual([]);
  });

  test('a resumed connection knows the certificate during 0-RTT, from its ticket', async () => {
    const { port, seen } = await quicServer();
    const tickets = new QuicTicketStore();
    const withCert = { cert: client.certPem, key: client.keyPem, tickets };
    const first = quicDialer(port, withCert);
    await echo(first, 'full');
    await waitFor(() => tickets.size === 1, 2000, 'a session ticket');
    await first.close();
    const second = quicDialer(port, withCert);
    const s = await echo(second, 'early');
    expect(s.info.quic?.earlyData).toBe(true);
    expect(seen[1]?.early).toBe(true);
    expect(seen[1]?.peer?.peerCertificate?.fingerprint256).toBe(client.fingerprint);
    // The same ticket store never resumes a certificate-less client as agent-1.
    const anonymous = quicDialer(port, { tickets });
    const a = await echo(anonymous, 'anon');
    expect(a.info.quic?.earlyData).toBe(false);
    expect(seen[2]?.peer?.peerCertificate).toBeNull();
  });

  test('cert without key is refused up front', async () => {
    const d = new QuicDialer({ host: '127.0.0.1', port: 1, serverName: 'localhost', cert: client.certPem });
    await expect(d.open()).rejects.toThrow(/both cert and key/);
  });
});

describe('TLS over TCP', () => {
  async function tlsServer(): Promise<{ port: number; accepted: SessionStream[] }> {
    const l = await listenTls({ port: 0, cert: server.certPem, key: server.keyPem, ca: client.caPem, requestCert: true, rejectUnauthorized: false });
    const accepted: SessionStream[] = [];
    l.onSession((s) => {
      s.on('error', () => {});
      accepted.push(s);
      s.pipe(s);
    });
    cleanups.push(() => l.close());
    return { port: l.address().port, accepted };
  }

  async function tlsEcho(port: number, o: { cert?: string; key?: string }): Promise<void> {
    const s = await dialTls({ host: 'localhost', port, ca: server.caPem, ...o });
    const reply = readAll(s);
    s.end('t');
    expect((await reply).toString()).toBe('t');
  }

  test('requestCert: a verified certificate, none, and an untrusted one', async () => {
    const { port, accepted } = await tlsServer();
    await tlsEcho(port, { cert: client.certPem, key: client.keyPem });
    await tlsEcho(port, {});
    await tlsEcho(port, { cert: stranger.certPem, key: stranger.keyPem });
    expect(accepted.map((s) => s.info.tls?.peerCertificate?.commonName ?? null)).toEqual(['agent-1', null, null]);
    expect(accepted[0]?.info.tls?.peerCertificate?.fingerprint256).toBe(client.fingerprint);
    expect(accepted.map((s) => s.info.tls?.authorized)).toEqual([true, false, false]);
  });
});

test('fingerprints in any spelling compare equal; garbage is no certificate', () => {
  const plain = client.fingerprint.replaceAll(':', '').toLowerCase();
  expect(canonicalFingerprint256(plain)).toBe(client.fingerprint);
  expect(canonicalFingerprint256('abc')).toBeNull();
  expect(peerCertificateFromDer(new Uint8Array([1, 2, 3]))).toBeNull();
});
