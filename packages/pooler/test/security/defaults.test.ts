// Security defaults: SCRAM-SHA-256 unless a user is configured otherwise, md5 and cleartext only
// when configured and (by default) only over an encrypted transport, random cancel keys that are
// unique per session, and a CancelRequest with a wrong key cancels nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeStartupPacket } from '@quicpool/wire';
import { generateDevCertificates } from '@quicpool/transport';
import { resolvePoolerConfig } from '../../src/index.js';
import { pgInfo, rejection, startPooler, untilRunning, withClient } from '../support/pooler-helpers.js';
import type { TestPooler } from '../support/pooler-helpers.js';
import { eventually, PROTOCOL_3_0, rawTcp, trustStartup } from '../hostile/helpers.js';
import type { RawSession } from '../hostile/helpers.js';

let p: TestPooler;
let ca: string;

beforeAll(async () => {
  const certs = await generateDevCertificates({ names: ['localhost'] });
  ca = certs.caPem;
  p = await startPooler({
    tls: { cert: certs.certPem, key: certs.keyPem },
    users: {
      [pgInfo.user]: { password: pgInfo.password },
      [pgInfo.md5User]: { password: pgInfo.md5Password, auth: 'md5' },
      [pgInfo.trustUser]: { auth: 'trust' },
      // Cleartext towards clients; the server logs this user in with md5_user's password.
      cleartext_user: { password: 'clear-pw', auth: 'password' },
    },
  });
});
afterAll(async () => {
  await p.close();
});

/** The first authentication request the pooler sends `user` over plain TCP. */
async function firstAuthRequest(port: number, user: string): Promise<RawSession> {
  const s = rawTcp(port);
  s.write(encodeStartupPacket({ type: 'StartupMessage', protocolVersion: PROTOCOL_3_0, parameters: { user, database: pgInfo.database } }));
  await s.until((m) => m.length > 0);
  return s;
}

describe('authentication defaults', () => {
  it('resolves to the documented secure defaults', () => {
    const c = resolvePoolerConfig({ server: { host: 'db', port: 5432 }, users: { app: { password: 'pw' } } });
    expect(c.users.get('app')?.auth).toBe('scram-sha-256');
    expect(c.allowInsecurePasswordAuth).toBe(false);
    expect(c.tls).toBeUndefined();
    expect(c.authTimeoutMs).toBe(60_000);
    expect(c.authFailureDelayMs).toBe(500);
    expect(c.maxMessageSize).toBe(64 * 1024 * 1024);
    expect(c.maxClientConnections).toBe(10_000);
  });

  it('asks a user configured with only a password for SCRAM-SHA-256 (and nothing else)', async () => {
    const s = await firstAuthRequest(p.port, pgInfo.user);
    expect(s.messages[0]).toEqual({ type: 'AuthenticationSASL', mechanisms: ['SCRAM-SHA-256'] });
    s.destroy();
  });

  it('never downgrades a SCRAM user, even where insecure methods are allowed', async () => {
    const lax = await startPooler({ allowInsecurePasswordAuth: true });
    try {
      const s = await firstAuthRequest(lax.port, pgInfo.user);
      expect(s.messages[0]).toEqual({ type: 'AuthenticationSASL', mechanisms: ['SCRAM-SHA-256'] });
      s.destroy();
    } finally {
      await lax.close();
    }
  });

  it('refuses md5 and cleartext users over unencrypted TCP with 28000 before asking for the password', async () => {
    for (const user of [pgInfo.md5User, 'cleartext_user']) {
      const s = await firstAuthRequest(p.port, user);
      await s.closedByPeer();
      expect(s.messages).toMatchObject([{ type: 'ErrorResponse', fields: { S: 'FATAL', C: '28000' } }]);
    }
  });

  it('accepts md5 and cleartext over TLS (SSLRequest), and over plain TCP only with allowInsecurePasswordAuth', async () => {
    const tls = { ssl: { ca, servername: 'localhost' } };
    await withClient(p.clientConfig({ user: pgInfo.md5User, password: pgInfo.md5Password, ...tls }), async (c) => {
      expect((await c.query('select current_user as u')).rows[0].u).toBe(pgInfo.md5User);
    });
    // (cleartext_user does not exist in Postgres: getting past the pooler's check is what counts.)
    const clear = await rejection(withClient(p.clientConfig({ user: 'cleartext_user', password: 'wrong', ...tls }), async () => undefined));
    expect(clear.code).toBe('28P01');
    expect(clear.message).toBe('password authentication failed for user "cleartext_user"');
    const plain = await rejection(withClient(p.clientConfig({ user: pgInfo.md5User, password: pgInfo.md5Password }), async () => undefined));
    expect(plain.code).toBe('28000');
    const lax = await startPooler({
      allowInsecurePasswordAuth: true,
      users: { [pgInfo.md5User]: { password: pgInfo.md5Password, auth: 'md5' }, [pgInfo.trustUser]: { password: 'clear-pw', auth: 'password' } },
    });
    try {
      await withClient(lax.clientConfig({ user: pgInfo.md5User, password: pgInfo.md5Password }), async (c) => {
        expect((await c.query('select current_user as u')).rows[0].u).toBe(pgInfo.md5User);
      });
      await withClient(lax.clientConfig({ user: pgInfo.trustUser, password: 'clear-pw' }), async (c) => {
        expect((await c.query('select current_user as u')).rows[0].u).toBe(pgInfo.trustUser);
      });
      const wrong = await rejection(withClient(lax.clientConfig({ user: pgInfo.trustUser, password: 'nope' }), async () => undefined));
      expect(wrong.code).toBe('28P01');
    } finally {
      await lax.close();
    }
  });
});

describe('cancel keys', () => {
  /** Opens `n` sessions at once with protocol 3.`minor` and returns their BackendKeyData. */
  async function keys(n: number, minor: number): Promise<{ processId: number; secretKey: Buffer }[]> {
    const sessions = Array.from({ length: n }, () => rawTcp(p.port));
    try {
      for (const s of sessions) s.write(trustStartup({}, (3 << 16) | minor));
      await Promise.all(sessions.map((s) => s.until(() => s.ready)));
      return sessions.map((s) => {
        const k = s.messages.find((m) => m.type === 'BackendKeyData');
        if (k?.type !== 'BackendKeyData') throw new Error('no BackendKeyData');
        return { processId: k.processId, secretKey: k.secretKey };
      });
    } finally {
      for (const s of sessions) s.destroy();
    }
  }

  /** Fraction of 1 bits over all keys. */
  const ones = (ks: { secretKey: Buffer }[]): { fraction: number; bits: number } => {
    let n = 0;
    let bits = 0;
    for (const k of ks) {
      for (const byte of k.secretKey) for (let b = byte; b !== 0; b &= b - 1) n++;
      bits += k.secretKey.length * 8;
    }
    return { fraction: n / bits, bits };
  };

  it('gives every session a random process id and secret: unique, full-width, balanced bits', async () => {
    for (const [minor, length] of [
      [0, 4],
      [2, 32],
    ] as const) {
      const ks = await keys(150, minor);
      expect(new Set(ks.map((k) => k.processId)).size).toBe(ks.length);
      expect(new Set(ks.map((k) => k.secretKey.toString('hex'))).size).toBe(ks.length);
      expect(ks.every((k) => k.secretKey.length === length && k.processId > 0)).toBe(true);
      // Not sequential: process ids spread over the 31-bit range.
      const ids = ks.map((k) => k.processId).sort((a, b) => a - b);
      expect(ids[ids.length - 1]! - ids[0]!).toBeGreaterThan(2 ** 29);
      // Each bit is 1 with probability 1/2: 4,800 bits (3.0) or 38,400 bits (3.2); bounds are > 5 sigma.
      const { fraction, bits } = ones(ks);
      expect(Math.abs(fraction - 0.5)).toBeLessThan(5 * Math.sqrt(0.25 / bits) + 0.001);
    }
    await eventually(() => p.pooler.stats().clients === 0, 5000, 'sessions gone');
  });

  it('cancels nothing with a wrong secret, a wrong process id or a truncated key; the right key cancels', async () => {
    await withClient(p.clientConfig(), async (a) => {
      const info = a as unknown as { processID: number; secretKey: number };
      const right = Buffer.alloc(4);
      right.writeInt32BE(info.secretKey | 0);
      const wrongSecret = Buffer.from(right);
      wrongSecret[3] = wrongSecret[3]! ^ 0x01;
      const before = p.pooler.stats();
      // Texts of their own: untilRunning must not see another test file's query on the shared server.
      const sql = 'select pg_sleep(0.6) as s /* defaults: wrong keys */';
      const slow = a.query(sql);
      await untilRunning(sql);
      for (const [processId, secretKey] of [
        [info.processID, wrongSecret],
        [info.processID ^ 1, right],
        [info.processID, right.subarray(0, 3)], // 3-byte keys are malformed: 08P01
      ] as const) {
        const c = rawTcp(p.port);
        const packet = Buffer.alloc(12 + secretKey.length);
        packet.writeInt32BE(packet.length, 0);
        packet.writeInt32BE(80877102, 4);
        packet.writeInt32BE(processId, 8);
        secretKey.copy(packet, 12);
        c.write(packet);
        await c.closedByPeer();
      }
      expect((await slow).rows).toHaveLength(1); // ran to the end: not cancelled
      const after = p.pooler.stats();
      expect(after.cancelRequestsTotal - before.cancelRequestsTotal).toBe(2); // the truncated one never counted as a request
      expect(after.cancelsForwardedTotal).toBe(before.cancelsForwardedTotal);
      // The right key does cancel (so the checks above could have failed).
      const sql2 = 'select pg_sleep(5) as s /* defaults: right key */';
      const slow2 = a.query(sql2);
      await untilRunning(sql2);
      const c = rawTcp(p.port);
      c.write(encodeStartupPacket({ type: 'CancelRequest', processId: info.processID, secretKey: right }));
      await c.closedByPeer();
      const e = await rejection(slow2);
      expect(e.code).toBe('57014');
    });
  });
});
