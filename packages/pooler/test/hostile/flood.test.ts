// A connection flood from one address at bounded concurrency, faster than the issue's "10,000
// per minute" (5,000 attempts by default to bound the test's time; QUICPOOL_FLOOD_ATTEMPTS=10000
// for the full count): bare connect-and-drop, full logins with Terminate, garbage,
// SSLRequest-and-drop. The pooler stays up, serves a good client throughout with bounded latency,
// and ends with no session left. The pooler does not rate-limit per address (docs/security.md).
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeFrontend } from '@quicpool/wire';
import { listenTcp } from '@quicpool/transport';
import pg from 'pg';
import { createPooler } from '../support/create-pooler.js';
import type { Pooler } from '../../src/index.js';
import { pgInfo } from '../support/pooler-helpers.js';
import { bounded, eventually, rawStartupPacket, RawSession, sleep, trustStartup } from './helpers.js';

const ATTEMPTS = Number(process.env.QUICPOOL_FLOOD_ATTEMPTS ?? 5_000);
const CONCURRENCY = Number(process.env.QUICPOOL_FLOOD_CONCURRENCY ?? 64);
let pooler: Pooler;
let port: number;

beforeAll(async () => {
  pooler = createPooler({
    server: { host: pgInfo.host, port: pgInfo.port },
    users: { [pgInfo.user]: { password: pgInfo.password }, [pgInfo.trustUser]: { auth: 'trust' } },
    pool: { poolSize: 4 },
  });
  const listener = await listenTcp({ host: '127.0.0.1', port: 0, backlog: 1024 });
  port = listener.address().port;
  pooler.listen(listener);
});
afterAll(async () => {
  await pooler.close({ graceful: false });
});

async function attempt(i: number): Promise<void> {
  const socket = net.connect({ host: '127.0.0.1', port });
  socket.on('error', () => undefined);
  const s = new RawSession(socket);
  await new Promise<void>((resolve) => {
    socket.once('connect', resolve);
    socket.once('close', resolve);
  });
  switch (i % 4) {
    case 0: // connect and drop
      socket.destroy();
      return;
    case 1: // a full login, then Terminate
      s.write(trustStartup());
      await s.until(() => s.ready, 10_000);
      s.write(encodeFrontend({ type: 'Terminate' }));
      await s.closedByPeer(10_000);
      socket.destroy();
      return;
    case 2: // garbage: 08P01 and close
      s.write(Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'));
      await s.closedByPeer(10_000);
      expect(s.errorCodes).toEqual(['08P01']);
      socket.destroy();
      return;
    default: // SSLRequest, read the answer, drop
      s.expectSslAnswers(1);
      s.write(rawStartupPacket(80877103));
      await s.until(() => s.sslAnswers.length > 0, 10_000);
      socket.destroy();
      return;
  }
}

describe('connection flood from one address', () => {
  it(`survives ${ATTEMPTS} connection attempts at concurrency ${CONCURRENCY} and keeps serving a good client`, async () => {
    const accepted0 = pooler.stats().clientsAcceptedTotal;
    const good = new pg.Client({ host: '127.0.0.1', port, user: pgInfo.user, password: pgInfo.password, database: pgInfo.database });
    good.on('error', () => undefined);
    await good.connect();
    let running = true;
    let ok = 0;
    let maxMs = 0;
    const loop = (async () => {
      while (running) {
        const t0 = performance.now();
        const r = await good.query('select 1 as one');
        maxMs = Math.max(maxMs, performance.now() - t0);
        if (r.rows[0]?.one === 1) ok++;
        await sleep(20);
      }
    })();
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    await bounded(ATTEMPTS, CONCURRENCY, attempt);
    const seconds = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const cpuUsPerAttempt = (cpu.user + cpu.system) / ATTEMPTS;
    running = false;
    await loop;
    // A brand-new client is served right after the flood too.
    const fresh = new pg.Client({ host: '127.0.0.1', port, user: pgInfo.user, password: pgInfo.password, database: pgInfo.database });
    await fresh.connect();
    expect((await fresh.query('select 2 as two')).rows).toEqual([{ two: 2 }]);
    await fresh.end();
    await good.end();
    console.log(`flood: ${ATTEMPTS} attempts (${((ATTEMPTS / seconds) * 60).toFixed(0)} per minute) in ${seconds.toFixed(1)} s (${(ATTEMPTS / seconds).toFixed(0)}/s; CPU of pooler + attackers ${cpuUsPerAttempt.toFixed(0)} µs per attempt); good client ${ok} queries, max ${maxMs.toFixed(0)} ms`);
    expect(ok).toBeGreaterThan(0);
    expect(pooler.stats().clientsAcceptedTotal - accepted0).toBeGreaterThanOrEqual(ATTEMPTS);
    await eventually(() => pooler.stats().clients === 0, 10_000, 'no session left');
    expect(pooler.stats().pools.every((x) => x.active === 0)).toBe(true);
  }, 120_000);
});
