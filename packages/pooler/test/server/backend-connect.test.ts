// Server logins against the real Postgres of the fixture: every password method it offers, the
// server's SQLSTATE kept on a refusal, and the three ways to reach it (TCP, TLS after SSLRequest
// with the certificate verified, the unix socket).
import { inject, describe, expect, it } from 'vitest';
import type {} from '@quicpool/pg-fixture';
import { generateDevCertificates } from '@quicpool/transport';
import { BackendLoginError, connectBackend as connectTo } from '../../src/backend/connect.js';
import type { BackendLogin } from '../../src/backend/connect.js';
import type { ServerAddress } from '../../src/backend/dial.js';
import { realClock } from '../../src/runtime/clock.js';
import type { Clock } from '../../src/runtime/clock.js';

const pg = inject('pg');

type Login = BackendLogin & { readonly server: ServerAddress };
const connectBackend = (l: Login, clock: Clock) => connectTo(l, l.server, clock);

const login = (server: ServerAddress, over: Partial<BackendLogin> = {}): Login => ({
  server,
  database: pg.database,
  user: pg.user,
  password: pg.password,
  connectTimeoutMs: 5000,
  ...over,
});

async function loginAndClose(l: Login): Promise<{ kind: string; encrypted: boolean; serverVersion: string | undefined }> {
  const c = await connectBackend(l, realClock);
  try {
    expect(c.processId).toBeGreaterThan(0);
    expect(c.secretKey.length).toBeGreaterThanOrEqual(4);
    return { kind: c.stream.info.kind, encrypted: c.stream.info.kind === 'tls', serverVersion: c.parameters.get('server_version') };
  } finally {
    c.stream.destroy();
  }
}

describe('connectBackend (real Postgres)', () => {
  const tcp: ServerAddress = { host: pg.host, port: pg.port };

  it.each([
    ['SCRAM', pg.user, pg.password],
    ['md5', pg.md5User, pg.md5Password],
    ['trust', pg.trustUser, undefined],
  ])('logs in with %s', async (_name, user, password) => {
    const r = await loginAndClose(login(tcp, { user, password }));
    expect(r.kind).toBe('tcp');
    expect(r.serverVersion).toBeTruthy();
  });

  it("keeps the server SQLSTATE of a refused login, except the pooler's own failed authentication (08004, never the client's 28P01)", async () => {
    const e = await connectBackend(login(tcp, { password: 'wrong' }), realClock).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(BackendLoginError);
    expect((e as BackendLoginError).toEncodedError()).toMatchObject({
      sqlstate: '08004',
      message: `pooler could not log in to the server as "${pg.user}": password authentication failed for user "${pg.user}"`,
    });
    expect((e as BackendLoginError).fields?.['D']).toBe("The server answered SQLSTATE 28P01 to the pooler's login; the pooler authenticated the client.");
    const d = await connectBackend(login(tcp, { database: 'no_such_db' }), realClock).catch((x: unknown) => x);
    expect((d as BackendLoginError).fields?.['C']).toBe('3D000');
  });

  it('logs in over TLS, verifying the certificate against the configured CA (verify-full)', async () => {
    const r = await loginAndClose(login({ host: 'localhost', port: pg.port, tls: { mode: 'verify-full', ca: pg.tlsCertPem } }));
    expect(r.kind).toBe('tls');
    // Postgres itself says the connection is encrypted.
    const c = await connectBackend(login({ host: '127.0.0.1', port: pg.port, tls: { mode: 'verify-full', ca: pg.tlsCertPem } }), realClock);
    try {
      expect(c.stream.info.tls?.authorized).toBe(true);
    } finally {
      c.stream.destroy();
    }
  });

  it('refuses a server whose certificate does not chain to the CA, or does not carry its name', async () => {
    const other = await generateDevCertificates({ names: ['localhost'] });
    const wrongCa = await connectBackend(login({ host: 'localhost', port: pg.port, tls: { mode: 'verify-full', ca: other.caPem } }), realClock).catch((x: unknown) => x);
    expect(wrongCa).toBeInstanceOf(Error);
    expect(String(wrongCa)).toMatch(/certificate|self.signed|verify/i);
    const wrongName = await connectBackend(
      login({ host: '127.0.0.1', port: pg.port, tls: { mode: 'verify-full', ca: pg.tlsCertPem, servername: 'db.example.com' } }),
      realClock,
    ).catch((x: unknown) => x);
    expect(wrongName).toBeInstanceOf(Error);
    expect(String(wrongName)).toMatch(/altnames|host|name/i);
  });

  it("'require' encrypts without verifying", async () => {
    const other = await generateDevCertificates({ names: ['elsewhere'] });
    const r = await loginAndClose(login({ host: '127.0.0.1', port: pg.port, tls: { mode: 'require', ca: other.caPem } }));
    expect(r.kind).toBe('tls');
  });

  it('logs in over the unix socket when host is a directory', async () => {
    const r = await loginAndClose(login({ host: pg.socketDir, port: pg.port }));
    expect(r.kind).toBe('unix');
    const md5 = await loginAndClose(login({ host: pg.socketDir, port: pg.port }, { user: pg.md5User, password: pg.md5Password }));
    expect(md5.kind).toBe('unix');
  });

  it('names the socket path when nothing listens there', async () => {
    const e = await connectBackend(login({ host: pg.socketDir, port: 1 }), realClock).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(Error);
    expect(String(e)).toContain(`${pg.socketDir}/.s.PGSQL.1`);
  });
});
