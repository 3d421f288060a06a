// Slow clients: a startup packet trickled one byte per second (cut off by authTimeoutMs, Postgres's
// authentication_timeout, with 57014), and a session idle inside a transaction while holding the
// pool's only backend (cut off by idleTransactionTimeoutMs with 25P03, the backend rolled back and
// handed to the next client). Neither holds up anyone else.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pgInfo, rejection, startPooler, withClient } from '../support/pooler-helpers.js';
import type { TestPooler } from '../support/pooler-helpers.js';
import { eventually, rawTcp, sleep, trustStartup } from './helpers.js';
import type { RawSession } from './helpers.js';

// Long enough that the good client of the first test (two SCRAM logins and a server login) is done
// well before it on a loaded machine: the test asserts that no slow session was cut off by then.
const AUTH_TIMEOUT_MS = 3000;
const IDLE_TX_TIMEOUT_MS = 3000; // real time: a stall of the loaded machine between begin and insert must not reach it
const TABLE = 'hostile_slow_rows';
let p: TestPooler;

beforeAll(async () => {
  p = await startPooler({ authTimeoutMs: AUTH_TIMEOUT_MS, pool: { poolSize: 1, idleTransactionTimeoutMs: IDLE_TX_TIMEOUT_MS, queryWaitTimeoutMs: 10_000 } });
  await withClient({ host: pgInfo.host, port: pgInfo.port, user: pgInfo.user, password: pgInfo.password, database: pgInfo.database }, async (c) => {
    await c.query(`drop table if exists ${TABLE}; create table ${TABLE} (x int)`);
  });
});
afterAll(async () => {
  await p.close();
});

/** Sends `bytes` one byte per `intervalMs` until the pooler closes the session. */
async function trickle(s: RawSession, bytes: Buffer, intervalMs: number): Promise<number> {
  let sent = 0;
  while (!s.closed && sent < bytes.length) {
    s.write(bytes.subarray(sent, sent + 1));
    sent++;
    await Promise.race([sleep(intervalMs), s.until(() => false, intervalMs).catch(() => undefined)]);
  }
  return sent;
}

describe('slow clients', () => {
  it('cuts off startup packets sent one byte per second after authTimeoutMs with 57014, while others are served', async () => {
    const slow = Array.from({ length: 20 }, () => rawTcp(p.port));
    const trickling = slow.map((s) => trickle(s, trustStartup(), 1000));
    // Meanwhile a good client logs in and queries at normal speed: it is done while every slow
    // session is still waiting for its cut-off.
    await withClient(p.clientConfig(), async (c) => {
      expect((await c.query('select 1 as one')).rows).toEqual([{ one: 1 }]);
    });
    expect(slow.filter((s) => s.closed)).toEqual([]);
    const sent = await Promise.all(trickling);
    for (const [i, s] of slow.entries()) {
      expect(s.closed).toBe(true);
      expect(s.messages).toMatchObject([{ type: 'ErrorResponse', fields: { S: 'FATAL', C: '57014' } }]);
      // Cut off by the timeout, not by the end of the packet: a 40-byte startup packet at one byte
      // per second never got through (the timeout itself is timed on a manual clock in pooling/timeouts).
      expect(sent[i]).toBeLessThan(trustStartup().length);
    }
    await eventually(() => p.pooler.stats().clients === 0, 3000, 'slow sessions gone');
  });

  it('cuts off a client that completed the startup packet but trickles its password', async () => {
    const s = rawTcp(p.port);
    s.write(Buffer.from(trustStartup().subarray(0, 0))); // nothing yet
    const { encodeStartupPacket } = await import('@quicpool/wire');
    s.write(encodeStartupPacket({ type: 'StartupMessage', protocolVersion: 3 << 16, parameters: { user: pgInfo.user, database: pgInfo.database } }));
    await s.until((m) => m.some((x) => x.type === 'AuthenticationSASL'));
    const response = Buffer.from('p\0\0\0\x36SCRAM-SHA-256\0\0\0\0\x20n,,n=,r=abcdefghijklmnopqrstuvwx');
    const sent = await trickle(s, response, 400);
    expect(s.errorCodes).toEqual(['57014']);
    expect(sent).toBeLessThan(response.length); // cut off before the SASLInitialResponse was complete
  });

  it('closes a session idle in a transaction holding the only backend (25P03); the backend is rolled back and serves the next client', async () => {
    const holder = new pg.Client(p.clientConfig());
    const errors: Error[] = [];
    holder.on('error', (e) => errors.push(e));
    await holder.connect();
    await holder.query('begin');
    await holder.query(`insert into ${TABLE} values (1)`);
    // The holder now sits idle in its transaction; the next client needs the pool's only backend.
    const count = await withClient(p.clientConfig(), async (c) => (await c.query(`select count(*)::int as n from ${TABLE}`)).rows[0].n as number);
    expect(count).toBe(0); // served only after the holder's transaction was rolled back, never committed
    const e = await rejection(holder.query('commit'));
    expect([e, ...errors].map((x) => (x as { code?: string }).code)).toContain('25P03');
    await holder.end().catch(() => undefined);
    await eventually(() => p.pooler.stats().clients === 0, 3000, 'holder gone');
  });
});
