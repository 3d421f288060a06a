import { describe, expect, inject, it } from 'vitest';
import pg from 'pg';

describe('pg-fixture', () => {
  const info = inject('pg');

  it('serves a real PostgreSQL with SCRAM-SHA-256 for the superuser', async () => {
    const client = new pg.Client({ host: info.host, port: info.port, user: info.user, password: info.password, database: info.database });
    await client.connect();
    const { rows } = await client.query<{ v: string; method: string | null }>(
      "SELECT version() AS v, (SELECT left(rolpassword, 14) FROM pg_authid WHERE rolname = current_user) AS method",
    );
    await client.end();
    expect(rows[0]?.v).toMatch(/^PostgreSQL 17\./);
    expect(rows[0]?.method).toBe('SCRAM-SHA-256$');
  });

  it('refuses a wrong password with 28P01', async () => {
    const client = new pg.Client({ host: info.host, port: info.port, user: info.user, password: 'wrong', database: info.database });
    await expect(client.connect()).rejects.toMatchObject({ code: '28P01' });
  });

  it('lets the trust user in without a password and the md5 user with md5', async () => {
    const trust = new pg.Client({ host: info.host, port: info.port, user: info.trustUser, database: info.database });
    await trust.connect();
    expect((await trust.query('SELECT current_user AS u')).rows[0]).toEqual({ u: info.trustUser });
    await trust.end();
    const md5 = new pg.Client({ host: info.host, port: info.port, user: info.md5User, password: info.md5Password, database: info.database });
    await md5.connect();
    expect((await md5.query('SELECT current_user AS u')).rows[0]).toEqual({ u: info.md5User });
    await md5.end();
  });
});
