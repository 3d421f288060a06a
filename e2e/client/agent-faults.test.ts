// The agent when things go wrong, seen by its local clients: no pooler listening (08001), a pooler
// whose certificate does not verify (08001), a pooler that does not speak the offered ALPN (08001; the
// pooler logs and counts the failed handshake), the pooler restarted under load (errors with
// SQLSTATEs, then the same clients reconnect; the agent's new connection resumes the session
// ticket), a local client vanishing mid-query (its stream is reset and the pooler releases the
// backend) and the agent's own limits (53300 at once beyond the queue, and after the queue wait).
import { randomBytes } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { createConnection } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateDevCertificates, QuicListener } from '@quicpool/transport';
import { createPooler } from '@quicpool/pooler';
import type { ClientEvent, Pooler } from '@quicpool/pooler';
import { SQLSTATE } from '@quicpool/wire';
import { devCerts, pgInfo, rejection, until } from './helpers.js';
import { createFaultRole, dropFaultRole, expectNoLeak } from './fault-helpers.js';
import type { FaultRole } from './fault-helpers.js';
import { startAgent } from './agent-helpers.js';
import type { TestAgent } from './agent-helpers.js';

const POOL_SIZE = 4;
const ticketKey = randomBytes(48);
let role: FaultRole;

interface Running {
  pooler: Pooler;
  quic: QuicListener;
  endpoint: string;
  stop(): Promise<void>;
}

async function startPooler(udpPort = 0): Promise<Running> {
  const certs = await devCerts();
  const pooler = createPooler({
    server: { host: pgInfo.host, port: pgInfo.port },
    users: { [role.user]: { password: role.password } },
    pool: { poolSize: POOL_SIZE, queryWaitTimeoutMs: 20_000 },
  });
  const quic = await QuicListener.listen({ cert: certs.certPem, key: certs.keyPem, host: '127.0.0.1', port: udpPort, ticketKey });
  pooler.listen(quic);
  return {
    pooler, quic, endpoint: `127.0.0.1:${quic.address().port}`,
    stop: async () => {
      await quic.close({ graceful: false });
      await pooler.close({ graceful: false });
    },
  };
}

/** A UDP port with nothing behind it (bound, then released). */
async function deadUdpPort(): Promise<number> {
  const s = createSocket('udp4');
  await new Promise<void>((r) => s.bind(0, '127.0.0.1', () => r()));
  const { port } = s.address();
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

const login = (a: TestAgent, host = '127.0.0.1'): pg.ClientConfig => ({ user: role.user, password: role.password, database: role.database, host, port: a.port });

let running: Running;
beforeAll(async () => {
  role = await createFaultRole('agent_fault');
  running = await startPooler();
});
afterAll(async () => {
  await running?.stop();
  if (role !== undefined) await dropFaultRole(role);
});

describe('the pooler cannot be reached', () => {
  it('no pooler listening: the local client gets FATAL 08001 naming the endpoint', async () => {
    const port = await deadUdpPort();
    const a = await startAgent(`127.0.0.1:${port}`, { sessions: { connectTimeoutMs: 1_000 } });
    try {
      const err = await rejection(new pg.Client(login(a)).connect());
      expect(err.code).toBe(SQLSTATE.SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION);
      expect(err.message).toMatch(new RegExp(`could not connect to the pooler: no quicpool pooler reachable \\(127\\.0\\.0\\.1:${port}`));
      expect(a.agent.stats().refused['08001']).toBe(1);
    } finally {
      await a.close();
    }
  });

  it('a certificate that does not verify: FATAL 08001 saying so', async () => {
    const other = await generateDevCertificates({ names: ['localhost'] });
    const a = await startAgent(running.endpoint, { sessions: { ca: other.caPem } });
    try {
      const err = await rejection(new pg.Client(login(a)).connect());
      expect(err.code).toBe(SQLSTATE.SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION);
      expect(err.message).toMatch(/the pooler's certificate did not verify/);
      expect(a.agent.stats().manager.connectionFailures).toBeGreaterThan(0);
    } finally {
      await a.close();
    }
  });

  it('an ALPN the pooler does not speak: FATAL 08001 saying so, and the pooler counts a failed handshake', async () => {
    const failed: string[] = [];
    const onEvent = (e: ClientEvent): void => {
      if (e.type === 'handshakeFailed') failed.push(e.reason);
    };
    running.pooler.events.client.add(onEvent);
    const before = running.quic.stats().handshakesFailed;
    const a = await startAgent(running.endpoint, { sessions: { quic: { alpn: ['h3'] } } });
    try {
      const err = await rejection(new pg.Client(login(a)).connect());
      expect(err.code).toBe(SQLSTATE.SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION);
      expect(err.message).toMatch(/ALPN/);
      expect(a.agent.stats().manager.connectionFailures).toBeGreaterThan(0);
      await until(() => failed.length > 0);
      expect(failed[0]).toMatch(/ALPN mismatch/);
      expect(running.quic.stats().handshakesFailed).toBeGreaterThan(before);
    } finally {
      running.pooler.events.client.delete(onEvent);
      await a.close();
    }
  });

  it('a refusal is an event (`quicpool connect` logs it at warn) and counted: a malformed startup packet gets 08P01', async () => {
    const a = await startAgent(running.endpoint);
    const refusals: { sqlstate: string; reason: string }[] = [];
    a.agent.on('event', (e) => {
      if (e.type === 'refused') refusals.push({ sqlstate: e.sqlstate, reason: e.reason });
    });
    try {
      const answer = await new Promise<Buffer>((resolve, reject) => {
        const chunks: Buffer[] = [];
        const s = createConnection({ host: '127.0.0.1', port: a.port }, () => s.write(Buffer.from([0, 0, 0, 3, 0, 0, 0, 0])));
        s.on('data', (b: Buffer) => chunks.push(b)).on('close', () => resolve(Buffer.concat(chunks))).on('error', reject);
      });
      expect(answer.toString('latin1')).toContain('C08P01');
      expect(a.agent.stats().refused['08P01']).toBe(1);
      expect(refusals).toEqual([{ sqlstate: '08P01', reason: expect.stringMatching(/invalid startup packet length 3/) }]);
    } finally {
      await a.close();
    }
  });
});

describe('a local client vanishes mid-query', () => {
  it('its stream is reset and the pooler releases (rolls back) its backend', async () => {
    const a = await startAgent(running.endpoint);
    try {
      const c = new pg.Client(login(a));
      c.on('error', () => undefined);
      await c.connect();
      await c.query('begin');
      const q = c.query('select pg_sleep(0.5)').catch((e: Error) => e);
      await until(() => running.pooler.stats().pools.some((p) => p.user === role.user && p.active > 0));
      expect(running.pooler.stats().clients).toBe(1);
      // Gone without Terminate (a killed process): FIN, no goodbye.
      (c as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
      await q;
      await until(() => a.agent.stats().clientsVanished === 1);
      await expectNoLeak(running.pooler, role.user, POOL_SIZE);
      expect(a.agent.stats().active).toBe(0);
    } finally {
      await a.close();
    }
  });
});

describe("the agent's limits", () => {
  it('beyond streams + queue: 53300 at once; a queued session gets a stream when one frees, or 53300 after queueTimeoutMs', async () => {
    const a = await startAgent(running.endpoint, {
      sessions: { maxConnections: 1, streamsPerConnection: 2 },
      // The queue time is real time: long enough for the hand-off below on a loaded machine.
      agent: { maxWaiting: 1, queueTimeoutMs: 2_000 },
    });
    const clients: pg.Client[] = [];
    try {
      for (let i = 0; i < 2; i++) {
        const c = new pg.Client(login(a));
        await c.connect();
        clients.push(c);
      }
      expect(a.agent.stats().active).toBe(2);
      const queued = new pg.Client(login(a));
      const queuedConnect = queued.connect();
      await until(() => a.agent.stats().waiting === 1);
      const err = await rejection(new pg.Client(login(a)).connect());
      expect(err.code).toBe(SQLSTATE.TOO_MANY_CONNECTIONS);
      expect(err.message).toMatch(/at most 1 connections x 2 streams and queues 1 more/);
      // A carried session ends: the queued one gets its stream.
      await clients.shift()!.end();
      await queuedConnect;
      clients.push(queued);
      expect((await queued.query<{ n: number }>('select 7 as n')).rows[0]?.n).toBe(7);
      // Full again: the next one waits its queue time, then 53300.
      const late = await rejection(new pg.Client(login(a)).connect());
      expect(late.code).toBe(SQLSTATE.TOO_MANY_CONNECTIONS);
      expect(late.message).toMatch(/within 2000 ms/);
      expect(a.agent.stats().refused['53300']).toBe(2);
    } finally {
      for (const c of clients) await c.end();
      await a.close();
    }
  });
});

describe('the pooler restarts under load', () => {
  it('local clients get errors with SQLSTATEs, then reconnect; the agent resumes its session ticket', async () => {
    const a = await startAgent(running.endpoint, { sessions: { endpointRetryMs: 50, connectTimeoutMs: 2_000 } });
    const errors: string[] = [];
    let restarted = false;
    let okAfter = 0;
    const stopAt = { done: false };
    const worker = async (): Promise<void> => {
      for (let n = 0; n < 5_000 && !stopAt.done; n++) {
        const c = new pg.Client(login(a));
        c.on('error', () => undefined);
        try {
          await c.connect();
          for (let i = 0; i < 20 && !stopAt.done; i++) {
            await c.query('select 1');
            if (restarted) okAfter++;
          }
          await c.end();
        } catch (e) {
          errors.push((e as { code?: string }).code ?? `no SQLSTATE: ${(e as Error).message}`);
          await c.end().catch(() => undefined);
          await new Promise((r) => setTimeout(r, 20)); // a client's retry pause
        }
      }
    };
    try {
      const workers = Array.from({ length: 4 }, () => worker());
      await until(() => a.agent.stats().sessions >= 8);
      const resumedBefore = a.agent.stats().manager.resumptions;
      const port = running.quic.address().port;
      await running.stop();
      running = await startPooler(port);
      restarted = true;
      await until(() => okAfter >= 40, 15_000);
      stopAt.done = true;
      await Promise.all(workers);
      expect(errors.length).toBeGreaterThan(0);
      for (const code of errors) expect(code).toMatch(/^(08006|08001|57P01)$/);
      expect(a.agent.stats().manager.resumptions).toBeGreaterThan(resumedBefore);
    } finally {
      stopAt.done = true;
      await a.close();
    }
  });
});
