// The session-state policy in transaction mode, one test per item (see the README's compatibility
// table): tracked parameters (SET TimeZone) follow their client from backend to backend; the rest
// (advisory session locks, LISTEN, WITH HOLD cursors, temp tables, SET of other settings, SQL
// PREPARE) pins the client's backend by default, is refused with 0A000 under 'reject', and is
// discarded when the transaction ends under 'reset'.
import type { EventEmitter } from 'node:events';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workersServing } from '../support/pooler-helpers.js';
import { startFidelityPooler } from './helpers.js';
import type { FidelityPooler, Via } from './helpers.js';

const pid = async (c: pg.Client): Promise<number> => (await c.query('select pg_backend_pid() as pid')).rows[0].pid as number;
const code = (e: unknown): string | undefined => (e as { code?: string }).code;

/** Session state items: how to create it, and how to see it is still there. */
const ITEMS: Record<string, { create: string; check: (c: pg.Client) => Promise<unknown> }> = {
  'advisory session lock': {
    create: 'select pg_advisory_lock(4242)',
    check: async (c) => (await c.query(`select count(*)::int as n from pg_locks where locktype = 'advisory' and objid = 4242 and pid = pg_backend_pid()`)).rows[0].n,
  },
  LISTEN: { create: 'listen fid_channel', check: async (c) => (await c.query('select count(*)::int as n from pg_listening_channels() where pg_listening_channels = $1', ['fid_channel'])).rows[0].n },
  'WITH HOLD cursor': {
    create: 'begin; declare fid_cur cursor with hold for select generate_series(1, 10) as x; commit',
    check: async (c) => (await c.query('fetch 1 from fid_cur')).rowCount,
  },
  'temp table': { create: 'create temp table fid_temp (x int); insert into fid_temp values (1)', check: async (c) => (await c.query('select count(*)::int as n from fid_temp')).rows[0].n },
  'SET of another setting': { create: `set work_mem = '7MB'`, check: async (c) => ((await c.query('show work_mem')).rows[0].work_mem === '7MB' ? 1 : 0) },
  'SQL PREPARE': { create: 'prepare fid_sql as select 1 as one', check: async (c) => (await c.query('execute fid_sql')).rows[0].one },
};

describe.each<Via>(['tcp', 'quic'])('tracked parameters over %s', (via) => {
  let p: FidelityPooler;
  beforeAll(async () => {
    p = await startFidelityPooler({ poolSize: 1 });
  });
  afterAll(async () => p.close());

  it('SET TimeZone in one transaction is seen by later transactions of the same client only, with its ParameterStatus', async () => {
    const a = await p.pgClient(via);
    const b = await p.pgClient(via);
    try {
      const statuses: string[] = [];
      (a as unknown as { connection: EventEmitter }).connection.on('parameterStatus', (m: { parameterName: string; parameterValue: string }) => {
        if (m.parameterName === 'TimeZone') statuses.push(m.parameterValue);
      });
      await a.query('begin');
      await a.query(`set TimeZone = 'Asia/Tokyo'`);
      await a.query('commit');
      expect(statuses).toEqual(['Asia/Tokyo']);
      const shared = await pid(a);
      // One backend per worker serving them: b gets the very backend a changed when they share a
      // worker; on another worker (pooler-workers2, over TCP) a backend of its own.
      if (workersServing(p.pooler) === 1) expect(await pid(b)).toBe(shared);
      else expect(await pid(b)).not.toBe(shared);
      expect((await b.query('show timezone')).rows[0].TimeZone).not.toBe('Asia/Tokyo');
      expect((await a.query('show timezone')).rows[0].TimeZone).toBe('Asia/Tokyo');
      expect((await b.query('show timezone')).rows[0].TimeZone).not.toBe('Asia/Tokyo');
      // SET LOCAL ends with its transaction, as in Postgres.
      await a.query('begin');
      await a.query(`set local TimeZone = 'Europe/Paris'`);
      await a.query('commit');
      expect((await a.query('show timezone')).rows[0].TimeZone).toBe('Asia/Tokyo');
    } finally {
      await a.end();
      await b.end();
    }
  }, 20_000);
});

describe.each<Via>(['tcp', 'quic'])("sessionStatePolicy 'pin' (default) over %s", (via) => {
  let p: FidelityPooler;
  beforeAll(async () => {
    p = await startFidelityPooler({ poolSize: 2 });
  });
  afterAll(async () => p.close());

  it.each(Object.keys(ITEMS))('%s: the client keeps its backend and its state; others are served; the backend is reset after', async (item) => {
    const { create, check } = ITEMS[item]!;
    const a = await p.pgClient(via);
    const others = await Promise.all([p.pgClient(via), p.pgClient(via), p.pgClient(via)]);
    try {
      await a.query(create);
      const mine = await pid(a);
      for (let i = 0; i < 5; i++) {
        // Other clients share the one remaining backend meanwhile.
        const theirs = await Promise.all(others.map((o) => pid(o)));
        for (const t of theirs) expect(t).not.toBe(mine);
        expect(await pid(a)).toBe(mine);
        expect(await check(a)).toBe(1);
      }
    } finally {
      await a.end();
    }
    try {
      // The pinned backend was reset when its client left: the state does not leak.
      for (let i = 0; i < 4; i++) {
        const c = others[i % others.length]!;
        if ((await pid(c)) !== undefined) {
          const leaked = await check(c).then(
            (v) => v,
            () => 0,
          );
          expect(leaked).not.toBe(1);
        }
      }
    } finally {
      await Promise.all(others.map((o) => o.end()));
    }
  }, 20_000);

  it('LISTEN keeps receiving notifications across many transactions of other clients', async () => {
    const a = await p.pgClient(via);
    const b = await p.pgClient(via);
    try {
      const got: string[] = [];
      a.on('notification', (n) => got.push(n.payload ?? ''));
      await a.query('listen fid_pin');
      for (let i = 0; i < 5; i++) await b.query(`select pg_notify('fid_pin', 'n${i}')`);
      for (let i = 0; i < 100 && got.length < 5; i++) await new Promise((r) => setTimeout(r, 10));
      expect(got).toEqual(['n0', 'n1', 'n2', 'n3', 'n4']);
    } finally {
      await a.end();
      await b.end();
    }
  }, 20_000);
});

describe("sessionStatePolicy 'reject'", () => {
  let p: FidelityPooler;
  beforeAll(async () => {
    p = await startFidelityPooler({ poolSize: 2, sessionStatePolicy: 'reject' });
  });
  afterAll(async () => p.close());

  it.each(Object.keys(ITEMS))('%s: refused with 0A000 and a message naming the policy; the session goes on', async (item) => {
    const a = await p.pgClient('tcp');
    try {
      const e = await a.query(ITEMS[item]!.create).catch((x: unknown) => x);
      expect(code(e)).toBe('0A000');
      expect((e as Error).message).toMatch(/sessionStatePolicy reject/);
      await a.query('rollback').catch(() => undefined); // the WITH HOLD item opened a transaction
      expect((await a.query('select 1 as one')).rows[0].one).toBe(1);
      // Transaction-scoped alternatives work.
      await a.query('begin');
      await a.query(`set local work_mem = '7MB'`);
      await a.query('select pg_advisory_xact_lock(4242)');
      await a.query('commit');
    } finally {
      await a.end();
    }
  }, 20_000);

  it('refuses it in the extended protocol too', async () => {
    const a = await p.pgClient('tcp');
    try {
      const e = await a.query('select pg_advisory_lock($1)', [1]).catch((x: unknown) => x);
      expect(code(e)).toBe('0A000');
      expect((await a.query('select $1::int as n', [5])).rows[0].n).toBe(5);
    } finally {
      await a.end();
    }
  }, 20_000);
});

describe("sessionStatePolicy 'reset'", () => {
  let p: FidelityPooler;
  beforeAll(async () => {
    p = await startFidelityPooler({ poolSize: 1, sessionStatePolicy: 'reset' });
  });
  afterAll(async () => p.close());

  it.each(Object.keys(ITEMS))('%s: runs, and is discarded when the transaction ends (backend reset)', async (item) => {
    const a = await p.pgClient('tcp');
    try {
      await a.query(ITEMS[item]!.create);
      const left = await ITEMS[item]!.check(a).then(
        (v) => v,
        () => 0,
      );
      expect(left).not.toBe(1);
    } finally {
      await a.end();
    }
  }, 20_000);
});
