// The agent presents a client certificate and the pooler maps it to users (auth = "cert"): local
// sessions then log in with no password round trip over the WAN. With the agent's local password
// check in front, the local client proves itself to the agent (SCRAM on the local hop) and the
// pooler trusts the agent's certificate. Without the certificate, or with one the pooler does not
// map, the pooler's 28000 reaches the local client.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateDevCertificates, QuicListener } from '@quicpool/transport';
import type { DevCertificates } from '@quicpool/transport';
import { createPooler } from '@quicpool/pooler';
import type { Pooler } from '@quicpool/pooler';
import { SQLSTATE } from '@quicpool/wire';
import { devCerts, pgInfo, rejection } from './helpers.js';
import { psql, runLibpq, startAgent } from './agent-helpers.js';
import type { TestAgent } from './agent-helpers.js';

let agentCert: DevCertificates;
let unmapped: DevCertificates;
let untrusted: DevCertificates;
let pooler: Pooler;
let listener: QuicListener;
let endpoint: string;

beforeAll(async () => {
  const server = await devCerts();
  [agentCert, unmapped, untrusted] = await Promise.all([
    generateDevCertificates({ names: ['agent-1'], caName: 'agents CA 1' }),
    generateDevCertificates({ names: ['agent-9'], caName: 'agents CA 9' }),
    generateDevCertificates({ names: ['agent-1'], caName: 'a CA the pooler does not trust' }),
  ]);
  pooler = createPooler({
    server: { host: pgInfo.host, port: pgInfo.port },
    users: {
      [pgInfo.user]: { auth: 'cert', certCommonNames: ['agent-1'], serverPassword: pgInfo.password },
      [pgInfo.trustUser]: { auth: 'cert', certCommonNames: ['agent-1'] },
    },
    pool: { poolSize: 4 },
  });
  listener = await QuicListener.listen({ cert: server.certPem, key: server.keyPem, host: '127.0.0.1', port: 0, clientCa: `${agentCert.caPem.trim()}\n${unmapped.caPem.trim()}\n` });
  pooler.listen(listener);
  endpoint = `127.0.0.1:${listener.address().port}`;
});
afterAll(async () => {
  await listener?.close({ graceful: false });
  await pooler?.close({ graceful: false });
});

const client = (a: TestAgent, user: string, password?: string): pg.Client =>
  new pg.Client({ host: '127.0.0.1', port: a.port, user, database: pgInfo.database, ...(password !== undefined ? { password } : {}) });

describe("the agent's client certificate", () => {
  it('logs local sessions in without a password (psql and pg)', async () => {
    const a = await startAgent(endpoint, { sessions: { cert: agentCert.certPem, key: agentCert.keyPem } });
    try {
      expect(await runLibpq(psql, ['-h', '127.0.0.1', '-p', String(a.port), '-Atc', 'select current_user'], { PGPASSWORD: '' })).toBe(`${pgInfo.user}\n`);
      const c = client(a, pgInfo.trustUser);
      await c.connect();
      expect((await c.query<{ u: string }>('select current_user as u')).rows[0]?.u).toBe(pgInfo.trustUser);
      await c.end();
    } finally {
      await a.close();
    }
  });

  it('with the local password check in front: the local client proves itself to the agent only', async () => {
    const a = await startAgent(endpoint, {
      sessions: { cert: agentCert.certPem, key: agentCert.keyPem },
      agent: { localChecks: { tcp: 'password', passwords: { [pgInfo.user]: 'local only' } } },
    });
    try {
      const c = client(a, pgInfo.user, 'local only');
      await c.connect();
      expect((await c.query<{ u: string }>('select current_user as u')).rows[0]?.u).toBe(pgInfo.user);
      await c.end();
      const wrong = await rejection(client(a, pgInfo.user, pgInfo.password).connect());
      expect(wrong.code).toBe(SQLSTATE.INVALID_PASSWORD);
      expect(a.agent.stats().localLogins).toBe(1);
    } finally {
      await a.close();
    }
  });

  it('no certificate, or one the pooler does not map: the pooler\'s 28000 reaches the local client', async () => {
    for (const cert of [null, unmapped]) {
      const a = await startAgent(endpoint, { sessions: cert === null ? {} : { cert: cert.certPem, key: cert.keyPem } });
      try {
        const err = await rejection(client(a, pgInfo.trustUser).connect());
        expect(err.code).toBe(SQLSTATE.INVALID_AUTHORIZATION_SPECIFICATION);
        expect(err.message).toMatch(/certificate authentication failed/);
      } finally {
        await a.close();
      }
    }
  });

  it('a certificate from a CA the pooler does not trust: 08001 saying the pooler rejected it', async () => {
    const a = await startAgent(endpoint, { sessions: { cert: untrusted.certPem, key: untrusted.keyPem } });
    try {
      const err = await rejection(client(a, pgInfo.trustUser).connect());
      expect(err.code).toBe(SQLSTATE.SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION);
      expect(err.message).toMatch(/the pooler rejected the agent's client certificate/);
    } finally {
      await a.close();
    }
  });
});
