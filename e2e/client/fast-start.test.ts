// Fast first query: QuicClient sends its first query right behind its last login message (the
// StartupMessage under trust once the pooler is known to want no password; the password or final
// SCRAM message otherwise), against a real pooler and a real Postgres. Proven by order, not by
// timing: without pipelining pg can only write its query after the server's ReadyForQuery arrived.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QuicTicketStore } from '@quicpool/transport';
import type { QuicSessionStream } from '@quicpool/transport';
import { QuicClient, SessionManager, StartupHints } from '@quicpool/client';
import type { SessionSource } from '@quicpool/client';
import { pgInfo, quicOptions, rejection, scramLogin, startQuicPooler, trustLogin, until } from './helpers.js';
import type { TestPooler } from './helpers.js';

let p: TestPooler;
/** A pooler with the read-only 0-RTT policy. */
let ro: TestPooler;
beforeAll(async () => {
  [p, ro] = await Promise.all([startQuicPooler(), startQuicPooler({ earlyData: 'read-only' })]);
});
afterAll(async () => {
  await p.close();
  await ro.close();
});

interface Trace {
  /** Server data chunks received before the client wrote its first query ('Q'). */
  chunksBeforeQuery: number | null;
  /** Whether the QUIC handshake was complete when the query was written. */
  confirmedAtQuery: boolean | null;
  earlyData: boolean | null;
}

/** A SessionSource that records, on each stream it hands out, when the first query is written. */
function tracing(manager: SessionManager): { source: SessionSource; traces: Trace[] } {
  const traces: Trace[] = [];
  const source: SessionSource = {
    startupHints: manager.startupHints,
    acquire: async (o) => {
      const s: QuicSessionStream = await manager.acquire(o);
      const trace: Trace = { chunksBeforeQuery: null, confirmedAtQuery: null, earlyData: s.info.quic?.earlyData ?? null };
      traces.push(trace);
      let chunks = 0;
      s.on('data', () => chunks++);
      const write = s.write.bind(s) as (chunk: unknown, ...rest: unknown[]) => boolean;
      (s as unknown as { write: (chunk: unknown, ...rest: unknown[]) => boolean }).write = (chunk, ...rest) => {
        if (trace.chunksBeforeQuery === null && Buffer.isBuffer(chunk) && chunk[0] === 0x51 /* 'Q' */) {
          trace.chunksBeforeQuery = chunks;
          trace.confirmedAtQuery = s.isHandshakeConfirmed;
        }
        return write(chunk, ...rest);
      };
      return s;
    },
  };
  return { source, traces };
}

describe('pipelined startup (fast first query)', () => {
  it('under trust: learns that no password is asked, then sends StartupMessage and query in one flight', async () => {
    const manager = new SessionManager(await quicOptions([p.endpoint]));
    const { source, traces } = tracing(manager);
    try {
      const first = new QuicClient({ ...trustLogin, sessions: source });
      await first.connect();
      expect((await first.query('select 1 as x')).rows[0].x).toBe(1);
      expect(first.startupPipelined).toBe(false); // nothing known yet: waited for ReadyForQuery
      expect(traces[0]!.chunksBeforeQuery).toBeGreaterThan(0);
      await first.end();
      expect(manager.startupHints.needsNoPassword(StartupHints.key(trustLogin.user, trustLogin.database))).toBe(true);

      const second = new QuicClient({ ...trustLogin, sessions: source });
      await second.connect();
      const r = await second.query('select current_user as u, 2 as x');
      expect(r.rows[0]).toEqual({ u: trustLogin.user, x: 2 });
      expect(second.startupPipelined).toBe(true);
      expect(traces[1]!.chunksBeforeQuery).toBe(0); // the query left before any byte came back
      expect((second as unknown as { processID: number | null }).processID).toBeGreaterThan(0); // BackendKeyData still reached pg
      expect((await second.query('select 3 as x')).rows[0].x).toBe(3);
      await second.end();
    } finally {
      await manager.close();
    }
  }, 20_000);

  it('under SCRAM: the first query goes out with the final SCRAM message', async () => {
    const manager = new SessionManager(await quicOptions([p.endpoint]));
    const { source, traces } = tracing(manager);
    try {
      const slow = new QuicClient({ ...scramLogin, sessions: source, fastStart: false });
      await slow.connect();
      expect((await slow.query('select 1 as x')).rows[0].x).toBe(1);
      await slow.end();
      const fast = new QuicClient({ ...scramLogin, sessions: source });
      await fast.connect();
      expect((await fast.query('select current_user as u')).rows[0].u).toBe(pgInfo.user);
      expect(fast.startupPipelined).toBe(true);
      await fast.end();
      // AuthenticationSASL and SASLContinue came back before the query was written; without
      // pipelining, AuthenticationOk .. ReadyForQuery too.
      expect(traces[1]!.chunksBeforeQuery).toBe(2);
      expect(traces[0]!.chunksBeforeQuery).toBeGreaterThan(2);
      expect(manager.startupHints.size).toBe(0); // SCRAM asks for a password: nothing to learn
    } finally {
      await manager.close();
    }
  }, 20_000);

  it('reports a failed login on the first query, and a wrong hint is forgotten', async () => {
    const manager = new SessionManager(await quicOptions([p.endpoint]));
    const key = StartupHints.key(scramLogin.user, scramLogin.database);
    try {
      const bad = new QuicClient({ ...scramLogin, password: 'wrong', sessions: manager });
      bad.on('error', () => undefined);
      await bad.connect(); // pipelined: the login's outcome arrives with the first query
      expect((await rejection(bad.query('select 1'))).code).toBe('28P01');
      await bad.end().catch(() => undefined);

      manager.startupHints.learn(key, true); // as if the pooler had accepted this login without a password
      const misled = new QuicClient({ ...scramLogin, sessions: manager });
      misled.on('error', () => undefined);
      await misled.connect();
      expect((await rejection(misled.query('select 1'))).code).toBe('08P01');
      await misled.end().catch(() => undefined);
      expect(manager.startupHints.needsNoPassword(key)).toBe(false);

      const fine = new QuicClient({ ...scramLogin, sessions: manager });
      await fine.connect();
      expect((await fine.query('select 4 as x')).rows[0].x).toBe(4);
      await fine.end();
      await until(() => manager.stats().streamsInUse === 0);
    } finally {
      await manager.close();
    }
  }, 20_000);

  it('on a 0-RTT connection: StartupMessage as early data, the query only once the handshake is complete', async () => {
    const tickets = new QuicTicketStore();
    const hints = new StartupHints();
    const warmup = new SessionManager(await quicOptions([p.endpoint], { tickets, startupHints: hints }));
    const w = new QuicClient({ ...trustLogin, sessions: warmup });
    await w.connect();
    await w.query('select 1');
    await w.end();
    await until(() => tickets.size === 1);
    await warmup.close();

    const manager = new SessionManager(await quicOptions([p.endpoint], { tickets, startupHints: hints }));
    const { source, traces } = tracing(manager);
    try {
      const c = new QuicClient({ ...trustLogin, sessions: source });
      await c.connect();
      expect((await c.query('select 5 as x')).rows[0].x).toBe(5);
      expect(c.startupPipelined).toBe(true);
      expect(traces[0]!.earlyData).toBe(true);
      expect(traces[0]!.confirmedAtQuery).toBe(true); // never a query in replayable early data
      await c.end();
      expect(manager.stats().resumptions).toBe(1);
    } finally {
      await manager.close();
    }
  }, 20_000);

  it("fastStart 'early-data': StartupMessage and first query together in 0-RTT; a write in it runs exactly once", async () => {
    for (const [name, pooler] of [['read-only', ro], ['wait', p]] as const) {
      const table = `e2e_early_${name.replace('-', '_')}`;
      const tickets = new QuicTicketStore();
      const hints = new StartupHints();
      const warmup = new SessionManager(await quicOptions([pooler.endpoint], { tickets, startupHints: hints }));
      const admin = new QuicClient({ ...scramLogin, sessions: warmup });
      await admin.connect();
      await admin.query(`drop table if exists ${table}; create table ${table} (x int); grant all on ${table} to public`);
      await admin.end();
      const w = new QuicClient({ ...trustLogin, sessions: warmup });
      await w.connect(); // learns that the trust login needs no password
      await w.end();
      await until(() => tickets.size === 1);
      await warmup.close();

      const manager = new SessionManager(await quicOptions([pooler.endpoint], { tickets, startupHints: hints }));
      const { source, traces } = tracing(manager);
      try {
        const c = new QuicClient({ ...trustLogin, sessions: source, fastStart: 'early-data' });
        await c.connect();
        expect((await c.query('select 6 as x')).rows[0].x).toBe(6);
        expect(c.startupPipelined).toBe(true);
        expect(traces[0]!.earlyData).toBe(true);
        expect(traces[0]!.confirmedAtQuery).toBe(false); // the query rode in the 0-RTT flight
        await c.end();
      } finally {
        await manager.close();
      }
      // A write as the first query of a resumed connection, in 0-RTT: the pooler holds it until the
      // handshake is confirmed (under both policies), and it runs exactly once.
      const again = new SessionManager(await quicOptions([pooler.endpoint], { tickets, startupHints: hints }));
      const second = tracing(again);
      try {
        const wr = new QuicClient({ ...trustLogin, sessions: second.source, fastStart: 'early-data' });
        await wr.connect();
        await wr.query(`insert into ${table} values (1)`);
        expect(second.traces[0]!.earlyData).toBe(true);
        expect(second.traces[0]!.confirmedAtQuery).toBe(false);
        expect((await wr.query(`select count(*)::int as n from ${table}`)).rows[0].n).toBe(1);
        await wr.end();
      } finally {
        await again.close();
      }
    }
  }, 30_000);
});
