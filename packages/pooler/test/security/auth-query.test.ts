// auth_query against the run's real PostgreSQL: a role only the server knows (created here, with a
// SCRAM password) logs in through the pooler with its own password, the pooler's login to the
// server uses the keys the client's proof revealed, lookups are cached (bound, TTL on the manual
// clock), unknown names and wrong passwords get the usual 28P01, and when the pooler's own login to
// the server fails the client gets 08004 "pooler could not log in to the server as ..." instead.
// Lookups are counted by the auth query itself (it advances a sequence), as the server sees them.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClientEvent } from '../../src/index.js';
import { ManualClock } from '../support/manual-clock.js';
import { pgInfo, rejection, startPooler, withClient } from '../support/pooler-helpers.js';
import type { TestPooler } from '../support/pooler-helpers.js';

const TTL_MS = 60_000;
const tag = randomBytes(4).toString('hex');
const role = `aq_app_${tag}`;
const seq = `aq_lookups_${tag}`;
const clock = new ManualClock();
const events: ClientEvent[] = [];
let p: TestPooler;
let admin: pg.Client;

const lookups = async (): Promise<number> => Number((await admin.query<{ n: string }>(`SELECT last_value - 1 AS n FROM ${seq}`)).rows[0]?.n);

beforeAll(async () => {
  admin = new pg.Client({ host: pgInfo.host, port: pgInfo.port, user: pgInfo.user, password: pgInfo.password, database: pgInfo.database });
  await admin.connect();
  await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD 'first-secret'`);
  await admin.query(`CREATE SEQUENCE ${seq}`);
  await admin.query(`SELECT nextval('${seq}')`); // last_value 1: no lookup yet
  p = await startPooler(
    {
      users: {
        [pgInfo.user]: { password: pgInfo.password },
        // The client logs in with the right password; the pooler's server password is wrong.
        [pgInfo.md5User]: { password: pgInfo.md5Password, serverPassword: 'not-the-server-password' },
      },
      // The default query, plus a branch that counts the lookup (and adds no row).
      authQuery: { user: pgInfo.user, query: `SELECT usename, passwd FROM pg_shadow WHERE usename=$1 UNION ALL SELECT NULL, NULL WHERE nextval('${seq}') < 0`, cacheSize: 2, cacheTtlMs: TTL_MS },
      authFailureDelayMs: 0,
    },
    { clock },
  );
  p.pooler.events.client.add((e) => events.push(e));
});
afterAll(async () => {
  await p?.close();
  await admin.query(`DROP ROLE IF EXISTS ${role}`);
  await admin.query(`DROP ROLE IF EXISTS aq_fresh_${tag}`);
  await admin.query(`DROP SEQUENCE IF EXISTS ${seq}`);
  await admin.end();
});

const as = (password: string, database = pgInfo.database): pg.ClientConfig => p.clientConfig({ user: role, password, database });

describe('auth_query', () => {
  it('a role only the server knows logs in with its own password; the pooler needs no copy of its secret or password', async () => {
    await withClient(as('first-secret'), async (c) => {
      expect((await c.query('SELECT current_user AS u')).rows).toEqual([{ u: role }]);
    });
    expect(await lookups()).toBe(1);
    // Cached: another login, on another database (a new pool, a new server login with the keys), no new lookup.
    await withClient(as('first-secret', 'template1'), async (c) => {
      expect((await c.query('SELECT current_database() AS d')).rows).toEqual([{ d: 'template1' }]);
    });
    expect(await lookups()).toBe(1);
  });

  it('a wrong password and an unknown role get 28P01 like any failed login; the log says what auth_query found', async () => {
    const wrong = await rejection(withClient(as('not-it'), () => Promise.resolve()));
    expect([wrong.code, wrong.message]).toEqual(['28P01', `password authentication failed for user "${role}"`]);
    const unknown = await rejection(withClient(p.clientConfig({ user: `nobody_${tag}`, password: 'x' }), () => Promise.resolve()));
    expect([unknown.code, unknown.message]).toEqual(['28P01', `password authentication failed for user "nobody_${tag}"`]);
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'loginFailed', user: `nobody_${tag}`, stage: 'authentication', sqlstate: '28P01', reason: `password authentication failed for user "nobody_${tag}" (not in the config; no such user (auth_query found no row))` }),
    );
    // The unknown name is cached too: a second try costs the server nothing.
    const before = await lookups();
    await rejection(withClient(p.clientConfig({ user: `nobody_${tag}`, password: 'x' }), () => Promise.resolve()));
    expect(await lookups()).toBe(before);
  });

  it('results live for the TTL on the pooler clock and the cache is bounded; a changed password counts after the TTL', async () => {
    await admin.query(`ALTER ROLE ${role} PASSWORD 'second-secret'`);
    clock.advance(TTL_MS);
    const before = await lookups();
    await withClient(as('second-secret'), async (c) => expect((await c.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]));
    expect(await lookups()).toBe(before + 1);
    const old = await rejection(withClient(as('first-secret'), () => Promise.resolve()));
    expect(old.code).toBe('28P01');
    // cacheSize 2: two other names push the role out; its next login is looked up again.
    for (const name of ['a', 'b']) await rejection(withClient(p.clientConfig({ user: `other_${name}_${tag}`, password: 'x' }), () => Promise.resolve()));
    const afterOthers = await lookups();
    expect(afterOthers).toBe(before + 3);
    await withClient(as('second-secret'), () => Promise.resolve());
    expect(await lookups()).toBe(afterOthers + 1);
  });
});

describe("the pooler's own server login fails", () => {
  it('with a wrong server password the client gets 08004 naming the pooler, and the log says which user and why', async () => {
    const e = await rejection(withClient(p.clientConfig({ user: pgInfo.md5User, password: pgInfo.md5Password }), () => Promise.resolve()));
    expect([e.code, e.message]).toEqual(['08004', `pooler could not log in to the server as "${pgInfo.md5User}": password authentication failed for user "${pgInfo.md5User}"`]);
    expect(events).toContainEqual(
      expect.objectContaining({
        type: 'loginFailed',
        user: pgInfo.md5User,
        stage: 'server login',
        sqlstate: '08004',
        reason: `pooler could not log in to the server as "${pgInfo.md5User}": password authentication failed for user "${pgInfo.md5User}"`,
      }),
    );
    // The client's own wrong password still gets 28P01: the two are told apart.
    const own = await rejection(withClient(p.clientConfig({ user: pgInfo.md5User, password: 'wrong' }), () => Promise.resolve()));
    expect(own.code).toBe('28P01');
  });

  it('a role whose server secret changed within the TTL: a new pool logs in with stale keys and gets 08004', async () => {
    const fresh = `aq_fresh_${tag}`;
    await admin.query(`CREATE ROLE ${fresh} LOGIN PASSWORD 'one'`);
    await withClient(p.clientConfig({ user: fresh, password: 'one' }), () => Promise.resolve()); // looked up, cached; pool (postgres, fresh) opened
    await admin.query(`ALTER ROLE ${fresh} PASSWORD 'two'`);
    const e = await rejection(withClient(p.clientConfig({ user: fresh, password: 'one', database: 'template1' }), () => Promise.resolve()));
    expect([e.code, e.message]).toEqual(['08004', `pooler could not log in to the server as "${fresh}": password authentication failed for user "${fresh}"`]);
  });
});

describe('a configured user with only its scram_secret (no server password)', () => {
  it("logs in to the server with the keys of the client's proof, when the secret is the server's own", async () => {
    const { rows } = await admin.query<{ secret: string }>('SELECT rolpassword AS secret FROM pg_authid WHERE rolname = $1', [role]);
    const q = await startPooler({ users: { [role]: { scramSecret: rows[0]?.secret ?? '' } } });
    try {
      await withClient(q.clientConfig({ user: role, password: 'second-secret' }), async (c) => {
        expect((await c.query('SELECT current_user AS u')).rows).toEqual([{ u: role }]);
      });
    } finally {
      await q.close();
    }
  });
});
