// Failover: a primary and a streaming standby (a copy of the primary's cluster, see the fixture's
// startStandby), both listed in server.hosts. Writers through the pooler (read-write, the default)
// use the primary, never the standby; readers of a `read-only` and a `prefer-standby` database use
// the standby while it is one. The primary is stopped and the standby promoted: the writers' pool
// moves to it and writes go on, with no write ever sent to a read-only server; the read-only pool
// finds no read-only server any more and says so; prefer-standby falls back to the new primary.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { queryLoop, startPostgres, withPgClient } from '@quicpool/pg-fixture';
import type { PostgresServer } from '@quicpool/pg-fixture';
import { listenTcp } from '@quicpool/transport';
import { createPooler } from '../support/create-pooler.js';
import type { Pooler, UpstreamEvent } from '../../src/index.js';
import { sleep, until } from './helpers.js';

const WRITERS = 8;
let primary: PostgresServer;
let standby: PostgresServer;
let pooler: Pooler;
let port: number;
const events: UpstreamEvent[] = [];

beforeAll(async () => {
  primary = await startPostgres();
  const su = { host: primary.info.host, port: primary.info.port, user: primary.info.user, password: primary.info.password };
  await withPgClient({ ...su, database: 'postgres' }, async (c) => {
    await c.query('CREATE DATABASE app');
    await c.query('CREATE DATABASE reports');
  });
  await withPgClient({ ...su, database: 'app' }, (c) => c.query('CREATE TABLE writes (client int, n serial primary key)'));
  standby = await primary.startStandby();
  pooler = createPooler({
    server: {
      host: '',
      port: 1,
      hosts: [{ host: primary.info.host, port: primary.info.port }, { host: standby.info.host, port: standby.info.port }],
      connectTimeoutMs: 5_000,
      outageWaitMs: 2_000,
    },
    users: { [primary.info.user]: { password: primary.info.password } },
    databases: { reports: { targetSessionAttrs: 'read-only' }, postgres: { targetSessionAttrs: 'prefer-standby' } },
    pool: { poolSize: 4, queryWaitTimeoutMs: 30_000 },
  });
  pooler.events.upstream.add((e) => void events.push(e));
  const tcp = await listenTcp({ host: '127.0.0.1', port: 0 });
  pooler.listen(tcp);
  port = tcp.address().port;
}, 60_000);
afterAll(async () => {
  await pooler?.close({ graceful: false });
  await standby?.stop();
  await primary?.stop();
});

const through = (database: string): pg.ClientConfig => ({ host: '127.0.0.1', port, database, user: primary.info.user, password: primary.info.password });
const inRecovery = (database: string): Promise<boolean> => withPgClient(through(database), async (c) => (await c.query('select pg_is_in_recovery() as r')).rows[0].r as boolean);

async function writer(): Promise<pg.Client> {
  const c = new pg.Client(through('app'));
  c.on('error', () => undefined);
  await c.connect();
  return c;
}

describe('failover between two hosts', () => {
  it('writes follow the promotion and never reach a read-only server; read-only pools use the standby while it is one', async () => {
    // Before: the writers' database on the primary, the others on the standby.
    expect(await inRecovery('app')).toBe(false);
    expect(await inRecovery('reports')).toBe(true);
    expect(await inRecovery('postgres')).toBe(true);

    const load = queryLoop(writer, WRITERS, 'insert into writes (client) values ($1)');
    await until('writes go on', async () => (await withPgClient(through('app'), (c) => c.query('select count(*)::int as n from writes'))).rows[0].n > 100, 10_000);
    await primary.shutdown('fast');
    const downAt = performance.now();
    await sleep(200); // writes wait: the primary refuses, the standby is not read-write yet
    await standby.promote();
    const promotedAt = performance.now();
    await until('writes on the new primary', () => events.some((e) => e.type === 'hostChanged' && e.database === 'app'), 10_000);
    await sleep(300);
    load.stop();
    const records = await load.done;

    // Only writes in flight when the primary stopped failed; none was refused as read-only
    // (25006), none failed later: every write begun after the stop waited for the promotion.
    const failed = records.filter((q) => q.error !== null);
    expect(failed.length).toBeLessThanOrEqual(WRITERS);
    for (const q of failed) {
      expect(['57P01', '08006']).toContain(q.error);
      expect(q.began).toBeLessThan(downAt);
    }
    expect(records.filter((q) => q.began > downAt).every((q) => q.error === null)).toBe(true);
    // Writes waited across the promotion and were answered after it.
    const waited = records.filter((q) => q.began < promotedAt && q.ended > promotedAt);
    expect(waited.length).toBeGreaterThan(0);
    for (const q of waited) expect(q.error).toBeNull();
    // Every answered write is on the new primary.
    const answered = records.filter((q) => q.error === null).length;
    const rows = await withPgClient(through('app'), async (c) => (await c.query('select count(*)::int as n, pg_is_in_recovery() as r from writes')).rows[0] as { n: number; r: boolean });
    expect(rows.r).toBe(false);
    expect(rows.n).toBeGreaterThanOrEqual(answered);

    // prefer-standby falls back to the new primary (its first query there told the pooler, and
    // every pool's idle connections to that host closed); read-only finds no read-only server any
    // more: its client waits upstream.outageWaitMs for one, then gets why.
    expect(await inRecovery('postgres')).toBe(false);
    const readOnly = await withPgClient(through('reports'), (c) => c.query('select 1')).then(
      () => null,
      (e: { code?: string; message: string }) => e,
    );
    expect(readOnly?.code).toBe('08001');
    expect(readOnly?.message).toMatch(/no server is read-only/);
    expect(events.filter((e) => e.type === 'hostChanged' && e.database === 'app').length).toBeGreaterThanOrEqual(1);
    // The writers' pool was down while only the read-only standby answered: logins were refused
    // for that (which login failed first, and so the serverDown line's reason, is a race with the
    // connections the primary's stop closed).
    expect(events.some((e) => e.type === 'serverDown' && e.database === 'app')).toBe(true);
    expect(events.some((e) => e.type === 'loginFailed' && e.database === 'app' && e.reason === 'NO_TARGET')).toBe(true);
  }, 90_000);
});
