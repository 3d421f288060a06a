// Isolation over QUIC, with one backend so the next client surely gets the vanished client's
// backend: a session variable set outside any transaction, or an open transaction with a write
// to a real table, never reaches the next client, whether the stream is reset or the whole QUIC
// connection is lost (the TCP vanish paths are in pg-isolation.test.ts).
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateDevCertificates, QuicDialer, QuicListener } from '@quicpool/transport';
import type { SessionStream } from '@quicpool/transport';
import { createPooler } from '../support/create-pooler.js';
import type { Pooler } from '../../src/index.js';
import { QuicSessions } from '../support/quic-sessions.js';
import { pgInfo, untilNoClients } from '../support/pooler-helpers.js';

let port: number;
let ca: string;
const sessions = new QuicSessions(() => ({ port, ca }));
const dialer = (): QuicDialer => sessions.dialer();
const client = sessions.client.bind(sessions);

const pidOf = async (c: pg.Client): Promise<number> => (await c.query('select pg_backend_pid() as pid')).rows[0].pid as number;

describe.each(['transaction', 'session'] as const)('QUIC vanish paths in %s mode (one backend)', (poolMode) => {
  let pooler: Pooler;
  beforeAll(async () => {
    const certs = await generateDevCertificates({ names: ['localhost'] });
    ca = certs.caPem;
    pooler = createPooler({
      server: { host: pgInfo.host, port: pgInfo.port },
      users: { [pgInfo.user]: { password: pgInfo.password } },
      pool: { poolSize: 1, poolMode, queryWaitTimeoutMs: 10_000 },
    });
    const listener = await QuicListener.listen({ cert: certs.certPem, key: certs.keyPem, host: '127.0.0.1', port: 0 });
    port = listener.address().port;
    pooler.listen(listener);
    const { c } = await client(dialer());
    await c.query(`create table if not exists quic_iso_${poolMode} (id int)`);
    await c.end();
  });
  afterAll(async () => {
    const { c } = await client(dialer());
    await c.query(`drop table if exists quic_iso_${poolMode}`);
    await c.end();
    await sessions.closeAll({ graceful: false });
    await pooler.close({ graceful: false });
  });

  for (const how of ['stream reset', 'connection loss'] as const) {
    const vanish = async (d: QuicDialer, s: SessionStream): Promise<void> => {
      if (how === 'stream reset') s.destroy(new Error('reset by test'));
      else await d.close({ graceful: false });
    };

    it(`a session variable does not reach the next client of the backend (${how})`, async () => {
      await untilNoClients(pooler);
      const d = dialer();
      const a = await client(d);
      const pidA = await pidOf(a.c);
      await a.c.query(`set my.secret = 'from-a'`);
      await a.c.query('set statement_timeout = 4321');
      await vanish(d, a.stream);
      await untilNoClients(pooler);
      const b = await client(dialer());
      try {
        expect(await pidOf(b.c)).toBe(pidA);
        expect((await b.c.query(`select current_setting('my.secret', true) as v`)).rows[0].v ?? '').toBe('');
        expect((await b.c.query('show statement_timeout')).rows[0].statement_timeout).toBe('0');
      } finally {
        await b.c.end();
      }
    });

    it(`an open transaction is rolled back before the next client gets the backend (${how})`, async () => {
      await untilNoClients(pooler);
      const d = dialer();
      const a = await client(d);
      const pidA = await pidOf(a.c);
      await a.c.query('begin');
      await a.c.query(`insert into quic_iso_${poolMode} values (1)`);
      await a.c.query(`lock table quic_iso_${poolMode} in access exclusive mode`);
      await vanish(d, a.stream);
      await untilNoClients(pooler);
      const b = await client(dialer());
      try {
        expect(await pidOf(b.c)).toBe(pidA);
        expect((await b.c.query('select now() = statement_timestamp() as fresh')).rows[0].fresh).toBe(true); // not in a's transaction
        expect((await b.c.query(`select count(*)::int as n from quic_iso_${poolMode}`)).rows[0].n).toBe(0);
      } finally {
        await b.c.end();
      }
    });
  }
});
