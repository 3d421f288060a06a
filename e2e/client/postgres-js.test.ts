// postgres.js over the socket factory, through a real pooler to a real Postgres.
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresSocket, SessionManager } from '@quicpool/client';
import { pgInfo, quicOptions, rejection, scramLogin, startQuicPooler, until } from './helpers.js';
import type { TestPooler } from './helpers.js';

let p: TestPooler;
let manager: SessionManager;
let sql: postgres.Sql;
const table = `qp_client_pgjs_${process.pid}`;

beforeAll(async () => {
  p = await startQuicPooler();
  manager = new SessionManager(await quicOptions([p.endpoint], { maxConnections: 2, streamsPerConnection: 5 }));
  // postgres.js' types do not declare `socket`; passing the options object as a variable is enough.
  const options = { ...scramLogin, username: scramLogin.user, max: 8, onnotice: () => undefined, socket: postgresSocket(manager) };
  sql = postgres(options);
  await sql.unsafe(`drop table if exists ${table}; create table ${table} (id int primary key, v text)`);
});
afterAll(async () => {
  const cleanup = postgres({ ...scramLogin, username: scramLogin.user, max: 1, onnotice: () => undefined, socket: postgresSocket(manager) } as postgres.Options<{}>);
  await cleanup.unsafe(`drop table if exists ${table}`);
  await cleanup.end({ timeout: 5 });
  await manager.close();
  await p.close();
});

describe('postgres.js over QUIC session streams', () => {
  it('runs queries, many at once, each connection on its own stream', async () => {
    const [row] = await sql`select ${41}::int + 1 as x, current_user as u`;
    expect(row).toEqual({ x: 42, u: pgInfo.user });
    const rows = await Promise.all(Array.from({ length: 200 }, (_, i) => sql`select ${i}::int as i`));
    rows.forEach((r, i) => expect(r[0]?.i).toBe(i));
    const s = manager.stats();
    expect(s.streamsInUse).toBeGreaterThan(1);
    expect(s.streamsInUse).toBeLessThanOrEqual(8); // postgres.js' max
    expect(s.connections).toBeLessThanOrEqual(2);
    expect(s.acquireFailures + s.connectionFailures).toBe(0);
  }, 20_000);

  it('commits and rolls back with sql.begin', async () => {
    await sql.begin(async (tx) => {
      await tx`insert into ${tx(table)} values (1, 'kept')`;
      await tx`insert into ${tx(table)} values (2, 'kept')`;
    });
    const err = await rejection(sql.begin(async (tx) => {
      await tx`insert into ${tx(table)} values (3, 'dropped')`;
      throw new Error('abort this transaction');
    }));
    expect(err.message).toBe('abort this transaction');
    const rows = await sql`select id from ${sql(table)} order by id`;
    expect(rows.map((r) => r.id)).toEqual([1, 2]);
  }, 20_000);

  it('reports errors with their SQLSTATE and keeps working', async () => {
    expect((await rejection(sql`select 1/0`)).code).toBe('22012');
    expect((await rejection(sql`insert into ${sql(table)} values (1, 'dup')`)).code).toBe('23505');
    expect((await rejection(sql.unsafe('selec 1'))).code).toBe('42601');
    const [row] = await sql`select 'still fine' as s`;
    expect(row?.s).toBe('still fine');
  }, 20_000);

  it('ends cleanly: every stream is released', async () => {
    // The manager's 2 x 5 streams: 8 held by `sql`, 2 left for this one.
    const other = postgres({ ...scramLogin, username: scramLogin.user, max: 2, socket: postgresSocket(manager) } as postgres.Options<{}>);
    await Promise.all([other`select pg_sleep(0.05)`, other`select pg_sleep(0.05)`]);
    const before = manager.stats().streamsInUse;
    expect(before).toBe(10);
    await other.end({ timeout: 5 });
    await until(() => manager.stats().streamsInUse === before - 2);
    await sql.end({ timeout: 5 });
    await until(() => manager.stats().streamsInUse === 0);
    expect(manager.stats().acquireFailures).toBe(0);
  }, 20_000);
});
