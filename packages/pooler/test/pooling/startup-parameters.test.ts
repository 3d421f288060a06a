// Startup parameters that drivers send (pg.Client's statement_timeout, lock_timeout,
// idle_in_transaction_session_timeout, options with -c / --name=value, application_name,
// search_path) through a transaction pooler with ONE backend: each client sees its own values on
// that shared backend, one that set nothing sees the server's defaults (never a neighbour's), and
// a refused parameter names the setting that would let it through.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rejection, startPooler, workersServing } from '../support/pooler-helpers.js';
import type { TestPooler } from '../support/pooler-helpers.js';

let p: TestPooler;
beforeAll(async () => {
  p = await startPooler({ pool: { poolSize: 1, poolMode: 'transaction' } });
});
afterAll(async () => p.close());

const SETTINGS = ['statement_timeout', 'lock_timeout', 'idle_in_transaction_session_timeout', 'default_transaction_isolation', 'search_path', 'application_name'];

async function settings(c: pg.Client): Promise<Record<string, string>> {
  const r = await c.query<{ name: string; setting: string }>('select name, current_setting(name) as setting from unnest($1::text[]) as name', [SETTINGS]);
  return Object.fromEntries(r.rows.map((row) => [row.name, row.setting]));
}

async function connect(config: pg.ClientConfig): Promise<pg.Client> {
  const c = new pg.Client(p.clientConfig(config));
  c.on('error', () => undefined);
  await c.connect();
  return c;
}

describe('startup parameters in transaction pooling (one shared backend)', () => {
  it('applies each client its own values and gives a client that set none the defaults', async () => {
    const a = await connect({
      statement_timeout: 1500,
      lock_timeout: 2500,
      idle_in_transaction_session_timeout: 60_000,
      application_name: 'client-a',
      options: '-c search_path=pg_catalog,public --default-transaction-isolation=serializable',
    });
    const b = await connect({});
    try {
      const defaults = await settings(b);
      for (let round = 0; round < 3; round++) {
        expect(await settings(a)).toEqual({
          statement_timeout: '1500ms',
          lock_timeout: '2500ms',
          idle_in_transaction_session_timeout: '1min',
          default_transaction_isolation: 'serializable',
          search_path: 'pg_catalog,public',
          application_name: 'client-a',
        });
        // The same backend, next transaction: b sees the server's values again.
        expect(await settings(b)).toEqual(defaults);
      }
      expect(defaults['statement_timeout']).toBe('0');
      expect(defaults['default_transaction_isolation']).toBe('read committed');
      // One backend per worker serving them: a and b take turns on it (with two workers each on its own).
      expect(new Set([(await a.query('select pg_backend_pid() as p')).rows[0].p, (await b.query('select pg_backend_pid() as p')).rows[0].p]).size).toBe(workersServing(p.pooler));
    } finally {
      await Promise.all([a.end(), b.end()]);
    }
  });

  it('the server enforces a startup statement_timeout', async () => {
    // Not 1 ms: the next client's SET of its own values on this backend runs under this timeout
    // (the server arms it when a Query arrives), and a loaded machine can take a millisecond.
    const c = await connect({ statement_timeout: 100 });
    try {
      expect((await rejection(c.query('select pg_sleep(5)'))).code).toBe('57014');
    } finally {
      await c.end();
    }
  });

  it('a value the server refuses ends the session with the server error, as Postgres refuses the login', async () => {
    const c = await connect({ options: '-c statement_timeout=soon' });
    try {
      const e = await rejection(c.query('select 1'));
      expect(e.code).toBe('22023');
      expect(e.message).toMatch(/statement_timeout/);
    } finally {
      await c.end().catch(() => undefined);
    }
    // The backend went away with the session; the next client is served.
    const d = await connect({});
    try {
      expect((await d.query('select 1 as n')).rows[0].n).toBe(1);
    } finally {
      await d.end();
    }
  });

  it('refuses a parameter it cannot keep per client, naming the setting that ignores it', async () => {
    const e = await rejection(connect({ options: '-c work_mem=64MB' }));
    expect(e.code).toBe('0A000');
    expect(e.message).toBe('unsupported startup parameter: work_mem (in options) (the pooler cannot keep it per client; add it to ignoreStartupParameters to have the pooler ignore it)');
    const named = await startPooler({ ignoreStartupParametersKey: 'limits.ignore_startup_parameters', ignoreStartupParameters: ['work_mem'] });
    try {
      const f = await rejection(withConfig(named, { options: '-c geqo=off' }));
      expect(f.message).toMatch(/add it to limits\.ignore_startup_parameters/);
      // An ignored name inside options is ignored like the parameter itself.
      const c = new pg.Client(named.clientConfig({ options: '-c work_mem=64MB' }));
      await c.connect();
      expect((await c.query('show work_mem')).rows[0].work_mem).not.toBe('64MB');
      await c.end();
    } finally {
      await named.close();
    }
  });
});

async function withConfig(t: TestPooler, config: pg.ClientConfig): Promise<void> {
  const c = new pg.Client(t.clientConfig(config));
  c.on('error', () => undefined);
  try {
    await c.connect();
  } finally {
    await c.end().catch(() => undefined);
  }
}
