// How a session ends, seen by node-postgres: through the pooler exactly what it sees on a direct
// connection to Postgres. A terminated server process (pg_terminate_backend) reports its FATAL
// 57P01 once (no second error of the pooler's after it: node-postgres would turn it into a second
// 'error' event, which crashes a program that registered `once('error')`); a client that ends
// at once (Terminate before any StartupMessage) is closed in silence. And a client whose large
// query got a backend at once stays readable (found by the differential test, e2e/differential).
import net from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeFrontend } from '@quicpool/wire';
import { untilBackendState } from '@quicpool/pg-fixture';
import type { BackendState } from '@quicpool/pg-fixture';
import { eventually } from '../hostile/helpers.js';
import { pgInfo, startPooler } from '../support/pooler-helpers.js';
import type { TestPooler } from '../support/pooler-helpers.js';

let p: TestPooler;
let admin: pg.Client;

beforeAll(async () => {
  p = await startPooler({ pool: { poolSize: 4, poolMode: 'session' } });
  admin = new pg.Client({ host: pgInfo.host, port: pgInfo.port, user: pgInfo.user, password: pgInfo.password, database: pgInfo.database });
  await admin.connect();
});
afterAll(async () => {
  await admin.end();
  await p.close();
});

const login = { user: pgInfo.trustUser, database: pgInfo.database, host: '127.0.0.1' };
const direct = (): pg.ClientConfig => ({ ...login, host: pgInfo.host, port: pgInfo.port });
const pooled = (): pg.ClientConfig => ({ ...login, port: p.port });

/** Terminates server process `pid` once it is in `state` (inside pg_sleep when active). */
async function terminate(pid: number, state: Exclude<BackendState, 'gone'>): Promise<void> {
  await untilBackendState(admin, pid, state, state === 'active' ? { waitEvent: 'PgSleep' } : {});
  await admin.query('select pg_terminate_backend($1)', [pid]);
}

type Moment = 'idle' | 'mid-query' | 'mid-transaction';

/** Everything node-postgres reports when its server process is terminated at `moment`. */
async function terminated(config: pg.ClientConfig, moment: Moment): Promise<string[]> {
  const events: string[] = [];
  const c = new pg.Client(config);
  c.on('error', (e: Error & { code?: string }) => events.push(`error:${e.code ?? e.message}`));
  const ended = new Promise<void>((resolve) => c.once('end', resolve));
  await c.connect();
  const pid = (await c.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
  let running: Promise<unknown> | null = null;
  if (moment === 'mid-transaction') await c.query('begin');
  // The query's outcome is recorded when it settles, like the events: recorded after terminate()
  // returned, its place in the list would depend on whether admin's answer came first.
  if (moment === 'mid-query') {
    running = c.query('select pg_sleep(30)').then(
      () => events.push('query:ok'),
      (e: Error & { code?: string }) => events.push(`query:${e.code ?? e.message}`),
    );
  }
  await terminate(pid, moment === 'mid-query' ? 'active' : moment === 'idle' ? 'idle' : 'idle in transaction');
  await running;
  await ended;
  events.push('end');
  // The next query of a client whose session ended.
  events.push(await c.query('select 1').then(() => 'next:ok', (e: Error) => `next:${e.message}`));
  return events;
}

describe('the end of a session, as node-postgres sees it', () => {
  for (const moment of ['idle', 'mid-query', 'mid-transaction'] as const) {
    it(`pg_terminate_backend ${moment}: the same events as on Postgres (one 57P01, then the end)`, async () => {
      const expected = await terminated(direct(), moment);
      expect(expected.filter((e) => e.includes('57P01'))).toHaveLength(1);
      expect(await terminated(pooled(), moment)).toEqual(expected);
    });
  }

  it('pg.Pool: a terminated idle client is removed with one error; the next query gets a new session', async () => {
    for (const config of [direct(), pooled()]) {
      const pool = new pg.Pool({ ...config, max: 1 });
      const errors: string[] = [];
      pool.on('error', (e: Error & { code?: string }) => errors.push(e.code ?? e.message));
      try {
        const removed = new Promise((resolve) => pool.once('remove', resolve));
        const pid = (await pool.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
        await terminate(pid, 'idle');
        await removed;
        expect(errors).toEqual(['57P01']);
        expect((await pool.query<{ x: number }>('select 2 as x')).rows[0]!.x).toBe(2);
      } finally {
        await pool.end();
      }
    }
  });

  it('a client that ends at once (Terminate before its StartupMessage) is closed without a word', async () => {
    // pg writes Terminate first (its socket is still connecting), then the StartupMessage, then
    // ends. Postgres reads a startup length of 0x58000000 and closes without a word; connect()
    // then never settles. An ErrorResponse instead rejects it, often with nobody listening.
    const outcome = async (config: pg.ClientConfig): Promise<string[]> => {
      const events: string[] = [];
      const c = new pg.Client(config);
      c.on('error', (e: Error) => events.push(`error:${e.message}`));
      c.connect().then(() => events.push('connected'), (e: Error) => events.push(`rejected:${e.message}`));
      await c.end();
      events.push('end');
      await new Promise((resolve) => setImmediate(resolve)); // let a rejection arrive, if any
      return events;
    };
    const expected = await outcome(direct());
    expect(expected).toEqual(['end']);
    expect(await outcome(pooled())).toEqual(expected);
    await eventually(() => p.pooler.stats().clients === 0);
  });

  it('raw bytes: Terminate as the first message gets no answer, just the close', async () => {
    for (const port of [pgInfo.port, p.port]) {
      const s = net.connect({ host: '127.0.0.1', port });
      const received: Buffer[] = [];
      s.on('data', (b: Buffer) => received.push(b));
      await new Promise<void>((resolve, reject) => s.once('connect', resolve).once('error', reject));
      s.write(encodeFrontend({ type: 'Terminate' }));
      await new Promise<void>((resolve) => s.once('close', () => resolve()));
      expect(Buffer.concat(received).length).toBe(0);
    }
    await eventually(() => p.pooler.stats().clients === 0);
  });
});

describe('a large query in transaction mode', () => {
  it('a query of 64 KiB or more that gets an idle backend at once leaves its client readable', async () => {
    const tx = await startPooler({ pool: { poolSize: 1, poolMode: 'transaction' } });
    const c = new pg.Client({ ...login, port: tx.port });
    try {
      await c.connect();
      await c.query('select 1'); // the pool's backend exists and is idle now
      const big = 'q'.repeat(100_000);
      expect((await c.query<{ n: number }>(`select length('${big}') as n`)).rows[0]!.n).toBe(100_000);
      // The pooler paused reading this client for good here: the next query never left.
      expect((await c.query<{ x: number }>('select 2 as x')).rows[0]!.x).toBe(2);
    } finally {
      await c.end();
      await tx.close();
    }
  });
});

