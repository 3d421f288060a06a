// node-postgres over QUIC streams through the pooler: one stream = one session, many sessions per
// QUIC connection; cancel on a fresh stream; stream reset and connection loss mid-transaction.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeStartupPacket } from '@quicpool/wire';
import { generateDevCertificates, QuicDialer, QuicListener } from '@quicpool/transport';
import { createPooler } from '../support/create-pooler.js';
import type { Pooler } from '../../src/index.js';
import { QuicSessions } from '../support/quic-sessions.js';
import { pgInfo, rejection, untilRunning } from '../support/pooler-helpers.js';

let pooler: Pooler;
let port: number;
let ca: string;
const sessions = new QuicSessions(() => ({ port, ca }));
const dialer = (): QuicDialer => sessions.dialer();
const client = sessions.client.bind(sessions);

beforeAll(async () => {
  const certs = await generateDevCertificates({ names: ['localhost'] });
  ca = certs.caPem;
  pooler = createPooler({
    server: { host: pgInfo.host, port: pgInfo.port },
    users: { [pgInfo.user]: { password: pgInfo.password }, [pgInfo.md5User]: { password: pgInfo.md5Password, auth: 'md5' } },
    pool: { poolSize: 1, queryWaitTimeoutMs: 10_000 },
  });
  const listener = await QuicListener.listen({ cert: certs.certPem, key: certs.keyPem, host: '127.0.0.1', port: 0 });
  port = listener.address().port;
  pooler.listen(listener);
});
afterAll(async () => {
  await sessions.closeAll();
  await pooler.close({ graceful: false });
});

describe('QUIC session streams through the pooler', () => {
  it('serves several sessions on one QUIC connection (SCRAM, and md5 since QUIC encrypts)', async () => {
    const d = dialer();
    const a = await client(d);
    const b = await client(d, { user: pgInfo.md5User, password: pgInfo.md5Password });
    try {
      const [ra, rb] = await Promise.all([
        a.c.query('select count(*)::int as n from generate_series(1, 10000)'),
        b.c.query('select current_user as u'),
      ]);
      expect(ra.rows[0].n).toBe(10000);
      expect(rb.rows[0].u).toBe(pgInfo.md5User);
      await a.c.query('begin');
      await a.c.query('select $1::int as x', [1]);
      await a.c.query('commit');
    } finally {
      await a.c.end();
      await b.c.end();
    }
  });

  it('cancels a query with a CancelRequest on a fresh stream', async () => {
    const d = dialer();
    const a = await client(d);
    try {
      const sql = 'select pg_sleep(10) /* quic: CancelRequest on a fresh stream */'; // its own text on the shared server
      const slow = a.c.query(sql);
      await untilRunning(sql);
      const key = Buffer.alloc(4);
      const info = a.c as unknown as { processID: number; secretKey: number };
      key.writeInt32BE(info.secretKey | 0);
      const cancelStream = await d.open();
      cancelStream.on('error', () => undefined);
      cancelStream.end(encodeStartupPacket({ type: 'CancelRequest', processId: info.processID, secretKey: key }));
      expect((await rejection(slow)).code).toBe('57014');
    } finally {
      await a.c.end();
    }
  });

  for (const how of ['stream reset', 'connection loss'] as const) {
    it(`rolls back a transaction whose QUIC ${how === 'stream reset' ? 'stream is reset' : 'connection is lost'}`, async () => {
      const d = dialer();
      const a = await client(d);
      await a.c.query('begin');
      await a.c.query('create temp table quic_gone (x int)');
      await a.c.query(`set my.quic = 'leak'`);
      if (how === 'stream reset') a.stream.destroy(new Error('reset by test'));
      else await d.close({ graceful: false });
      const b = await client(dialer());
      try {
        expect((await b.c.query(`select to_regclass('pg_temp.quic_gone') as t`)).rows[0].t).toBeNull();
        expect((await b.c.query(`select current_setting('my.quic', true) as v`)).rows[0].v ?? '').toBe('');
      } finally {
        await b.c.end();
        await a.c.end().catch(() => undefined);
      }
    });
  }
});
