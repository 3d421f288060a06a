import { inject, describe, expect, it } from 'vitest';
import type {} from '@quicpool/pg-fixture';
import { BackendLoginError, connectBackend } from '../src/backend/connect.js';

const pg = inject('pg');

describe('connectBackend (real Postgres)', () => {
  const base = { host: pg.host, port: pg.port, database: pg.database, connectTimeoutMs: 5000 };

  it.each([
    ['SCRAM', pg.user, pg.password],
    ['md5', pg.md5User, pg.md5Password],
    ['trust', pg.trustUser, undefined],
  ])('logs in with %s', async (_name, user, password) => {
    const c = await connectBackend({ ...base, user, password });
    try {
      expect(c.processId).toBeGreaterThan(0);
      expect(c.secretKey.length).toBeGreaterThanOrEqual(4);
      expect(c.parameters.get('server_version')).toBeTruthy();
    } finally {
      c.socket.destroy();
    }
  });

  it('keeps the server SQLSTATE of a refused login', async () => {
    const e = await connectBackend({ ...base, user: pg.user, password: 'wrong' }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(BackendLoginError);
    expect((e as BackendLoginError).fields?.['C']).toBe('28P01');
    const d = await connectBackend({ ...base, database: 'no_such_db', user: pg.user, password: pg.password }).catch((x: unknown) => x);
    expect((d as BackendLoginError).fields?.['C']).toBe('3D000');
  });
});
