import type net from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPooler, untilNoClients, withClient } from '../support/pooler-helpers.js';
import type { TestPooler } from '../support/pooler-helpers.js';

/** The socket under a pg.Client (pg keeps it at connection.stream). */
const socketOf = (c: pg.Client): net.Socket => (c as unknown as { connection: { stream: net.Socket } }).connection.stream;

async function connected(p: TestPooler): Promise<pg.Client> {
  const c = new pg.Client(p.clientConfig());
  c.on('error', () => undefined);
  await c.connect();
  return c;
}

const vanish = {
  'socket reset': (c: pg.Client) => socketOf(c).resetAndDestroy(),
  'socket close': (c: pg.Client) => socketOf(c).end(),
} as const;

async function pidOf(c: pg.Client): Promise<number> {
  return (await c.query('select pg_backend_pid() as pid')).rows[0].pid as number;
}

describe.each(['transaction', 'session'] as const)('isolation in %s mode (one backend)', (poolMode) => {
  let p: TestPooler;
  beforeAll(async () => {
    p = await startPooler({ pool: { poolSize: 1, poolMode, queryWaitTimeoutMs: 10_000 } });
    await withClient(p.clientConfig(), (c) => c.query('create table if not exists iso_test (id int)'));
  });
  afterAll(async () => {
    await withClient(p.clientConfig(), (c) => c.query('drop table if exists iso_test'));
    await p.close();
  });

  for (const [how, kill] of Object.entries(vanish)) {
    it(`rolls back an open transaction when its client vanishes (${how})`, async () => {
      await untilNoClients(p.pooler);
      const a = await connected(p);
      const pidA = await pidOf(a);
      await a.query('begin');
      await a.query('insert into iso_test values (1)');
      await a.query(`set my.flag = 'leaked'`);
      kill(a);
      await untilNoClients(p.pooler);
      await withClient(p.clientConfig(), async (b) => {
        expect(await pidOf(b)).toBe(pidA); // same backend, rolled back and reset
        expect((await b.query('select count(*)::int as n from iso_test')).rows[0].n).toBe(0);
        expect((await b.query(`select current_setting('my.flag', true) as v`)).rows[0].v ?? '').toBe('');
        expect((await b.query('select 1 as ok')).rows[0].ok).toBe(1);
      });
      await a.end().catch(() => undefined);
    });

    it(`resets a session variable when its client vanishes (${how})`, async () => {
      await untilNoClients(p.pooler);
      const a = await connected(p);
      await a.query(`set my.var = 'secret'`);
      await a.query('set statement_timeout = 12345');
      kill(a);
      await untilNoClients(p.pooler);
      await withClient(p.clientConfig(), async (b) => {
        expect((await b.query(`select current_setting('my.var', true) as v`)).rows[0].v ?? '').toBe('');
        expect((await b.query('show statement_timeout')).rows[0].statement_timeout).toBe('0');
      });
      await a.end().catch(() => undefined);
    });
  }

  // In session mode the one backend stays with the first client, so this needs transaction mode.
  if (poolMode === 'transaction') it('re-applies reported parameters a client set, and only for that client', async () => {
    await withClient(p.clientConfig({ application_name: 'iso-app' }), async (a) => {
      await a.query(`set TimeZone = 'Asia/Tokyo'`);
      await withClient(p.clientConfig(), async (b) => {
        const tz = (await b.query('show timezone')).rows[0].TimeZone as string;
        expect(tz).not.toBe('Asia/Tokyo');
        expect((await b.query(`select current_setting('application_name') as n`)).rows[0].n).toBe('');
      });
      expect((await a.query('show timezone')).rows[0].TimeZone).toBe('Asia/Tokyo');
      expect((await a.query(`select current_setting('application_name') as n`)).rows[0].n).toBe('iso-app');
    });
  });
});
