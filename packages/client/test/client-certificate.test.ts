// The session manager presents a client certificate (inline PEM or files) to a QUIC server that
// asks for one; the server sees it verified on every stream, including after resumption.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { QuicListener, generateDevCertificates } from '@quicpool/transport';
import type { DevCertificates, SessionStream } from '@quicpool/transport';
import { SessionManager } from '../src/index.js';

let server: DevCertificates;
let client: DevCertificates;
let listener: QuicListener;
const seen: Array<string | null> = [];
const dir = mkdtempSync(join(tmpdir(), 'quicpool-client-cert-'));

beforeAll(async () => {
  [server, client] = await Promise.all([generateDevCertificates(), generateDevCertificates({ names: ['agent-1'] })]);
  listener = await QuicListener.listen({ cert: server.certPem, key: server.keyPem, clientCa: client.caPem });
  listener.onSession((s: SessionStream) => {
    s.on('error', () => {});
    seen.push(s.info.tls?.peerCertificate?.fingerprint256 ?? null);
    s.end();
  });
});
afterAll(async () => {
  await listener.close({ graceful: false });
  rmSync(dir, { recursive: true, force: true });
});

async function oneStream(m: SessionManager): Promise<void> {
  const s = await m.acquire();
  s.on('error', () => {});
  s.resume();
  // A stream reaches the server with its first bytes.
  s.end('x');
  await new Promise((r) => s.once('end', r));
}

it('presents cert/key or certFile/keyFile; without them the server sees none', async () => {
  const endpoints = [`127.0.0.1:${listener.address().port}`];
  const base = { endpoints, serverName: 'localhost', ca: server.caPem };
  writeFileSync(join(dir, 'client.crt'), client.certPem);
  writeFileSync(join(dir, 'client.key'), client.keyPem);
  const managers = [
    new SessionManager({ ...base, cert: client.certPem, key: client.keyPem }),
    new SessionManager({ ...base, certFile: join(dir, 'client.crt'), keyFile: join(dir, 'client.key') }),
    new SessionManager(base),
  ];
  try {
    for (const m of managers) await oneStream(m);
  } finally {
    for (const m of managers) await m.close({ graceful: false });
  }
  expect(seen).toEqual([client.fingerprint, client.fingerprint, null]);
  expect(() => new SessionManager({ ...base, cert: client.certPem })).toThrow(/both cert and key/);
  expect(() => new SessionManager({ ...base, cert: client.certPem, certFile: 'x', key: client.keyPem })).toThrow(/not both/);
});
