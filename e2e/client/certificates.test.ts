// Certificate verification of the pooler over QUIC: on by default, refuses a wrong CA and a wrong
// name, supports a pinned fingerprint, and has one loudly named insecure mode.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateDevCertificates } from '@quicpool/transport';
import { QuicPool, SessionManager } from '@quicpool/client';
import { devCerts, quicOptions, rejection, startQuicPooler, trustLogin } from './helpers.js';
import type { TestPooler } from './helpers.js';

let p: TestPooler;
let otherCa: string;
beforeAll(async () => {
  p = await startQuicPooler();
  otherCa = (await generateDevCertificates({ names: ['localhost'] })).caPem;
});
afterAll(async () => {
  await p.close();
});

async function firstQuery(options: ConstructorParameters<typeof SessionManager>[0]): Promise<{ result: Promise<unknown>; manager: SessionManager }> {
  const manager = new SessionManager(options);
  const pool = new QuicPool({ ...trustLogin, quic: manager });
  const result = pool.query('select 1 as x').finally(async () => {
    await pool.end();
    await manager.close();
  });
  return { result, manager };
}

describe('pooler certificate verification over QUIC', () => {
  it('refuses a certificate from the wrong CA', async () => {
    const { result, manager } = await firstQuery({ endpoints: [p.endpoint], serverName: 'localhost', ca: otherCa });
    const err = await rejection(result);
    expect(err.code).toBe('ERR_TLS_CERT');
    expect(err.message).toMatch(/no quicpool pooler reachable/);
    expect(manager.stats().connectionFailures).toBe(1);
  });

  it('refuses a certificate without the expected name', async () => {
    const { result } = await firstQuery({ endpoints: [p.endpoint], serverName: 'db.example.com', ca: (await devCerts()).caPem });
    const err = await rejection(result);
    expect(err.code).toBe('ERR_TLS_CERT');
    expect(err.message).toMatch(/db\.example\.com/);
  });

  it('refuses by default when no CA is given (the dev CA is not a public root)', async () => {
    const { result } = await firstQuery({ endpoints: [p.endpoint], serverName: 'localhost' });
    expect((await rejection(result)).code).toBe('ERR_TLS_CERT');
  });

  it('accepts the right CA and name, and a pinned fingerprint; refuses a wrong pin', async () => {
    const good = await firstQuery(await quicOptions([p.endpoint]));
    await expect(good.result).resolves.toBeTruthy();
    const { fingerprint } = await devCerts();
    const pinned = await firstQuery({ endpoints: [p.endpoint], pinnedFingerprint: fingerprint });
    await expect(pinned.result).resolves.toBeTruthy();
    const wrong = await firstQuery({ endpoints: [p.endpoint], pinnedFingerprint: 'AB'.repeat(32) });
    const err = await rejection(wrong.result);
    expect(err.code).toBe('ERR_TLS_CERT');
    expect(err.message).toMatch(/does not match the pinned/);
  });

  it('skips verification only with dangerouslyAcceptAnyCertificate, with a warning', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error): void => void warnings.push(w.message);
    process.on('warning', onWarning);
    try {
      const { result } = await firstQuery({ endpoints: [p.endpoint], ca: otherCa, dangerouslyAcceptAnyCertificate: true });
      await expect(result).resolves.toBeTruthy();
      await new Promise((r) => setImmediate(r));
      expect(warnings.some((w) => /NOT verified/.test(w))).toBe(true);
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('refuses configurations that would not verify: IP without serverName, pg ssl over QUIC', () => {
    expect(() => new SessionManager({ endpoints: ['127.0.0.1:1'] })).toThrow(/serverName is required/);
    expect(() => new QuicPool({ ssl: true, quic: { endpoints: ['localhost:1'] } })).toThrow(/leave `ssl` unset/);
  });
});
