// `pnpm bench:faults` (docs/benchmark.md, "Faults"): what clients see when PostgreSQL restarts (`pg_ctl -m fast
// restart`) or fails over (the primary stopped, its streaming standby promoted at once), a third of the way into
// the same load, through quicpool (TCP and QUIC; both hosts listed) and PgBouncer when installed (the primary only:
// it cannot follow a promotion). Every process it starts (Postgres, standby, daemon, PgBouncer) it stops.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { queryLoop, startPostgres, withPgClient } from '@quicpool/pg-fixture';
import type { PostgresServer } from '@quicpool/pg-fixture';
import { forNodePostgres, QuicDialer } from '@quicpool/transport';
import { quicPortOf, startDaemon } from '../stack/daemon.js';
import { findPgbouncer, startPgbouncer } from '../stack/pgbouncer.js';
import type { PgTarget } from '../stack/postgres.js';
import { faultFigures } from './figures.js';
import type { FaultFigures } from './figures.js';

/** `seconds`: the length of each run; the fault comes a third of the way in. */
export type FaultsOptions = Readonly<{ clients: number; seconds: number; poolSize: number; json: boolean }>;

type Target = 'quicpoolTcp' | 'quicpoolQuic' | 'pgbouncer';

type Login = Pick<PgTarget, 'user' | 'password' | 'database'>;

/** A pooler in front of `hosts`, and how a client session reaches it. */
type Entry = { connect(): Promise<pg.Client>; stop(): Promise<void> };
type Host = { host: string; port: number };
/** Starts a target's pooler in front of `hosts` (the primary first). */
type MakeEntry = (hosts: readonly Host[], login: Login) => Promise<Entry>;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** How long queries still waiting at the end of a run may take before they count as unanswered. */
const GRACE_MS = 3_000;

async function connected(config: pg.ClientConfig): Promise<pg.Client> {
  const c = new pg.Client(config);
  c.on('error', () => undefined);
  await c.connect();
  return c;
}

/** The quicpool daemon in front of `hosts` (one for the restart, two for the failover), reached over `via`. */
async function quicpoolEntry(hosts: readonly Host[], login: Login, poolSize: number, via: 'tcp' | 'quic'): Promise<Entry> {
  const stateDir = await mkdtemp(join(tmpdir(), 'quicpool-bench-faults-'));
  const daemon = await startDaemon({
    listenHost: '127.0.0.1',
    upstream: hosts.length === 1 ? hosts[0]! : { hosts },
    users: { [login.user]: { password: login.password } },
    poolSize,
    stateDir,
  });
  const dialers = via === 'quic' ? [0, 1].map(() => new QuicDialer({ host: '127.0.0.1', port: quicPortOf(daemon), serverName: 'localhost', ca: daemon.caPem })) : [];
  let n = 0;
  return {
    async connect() {
      if (via === 'tcp') return connected({ host: '127.0.0.1', port: daemon.tcpPort, ...login });
      const stream = await dialers[n++ % dialers.length]!.open();
      stream.on('error', () => undefined);
      return connected({ ...login, stream: () => forNodePostgres(stream) });
    },
    async stop() {
      for (const d of dialers) await d.close().catch(() => undefined);
      await daemon.stop();
      await rm(stateDir, { recursive: true, force: true });
    },
  };
}

/** PgBouncer 1.x has one host per database: the primary. */
async function pgbouncerEntry(bin: string, host: Host, login: Login, poolSize: number): Promise<Entry> {
  const b = await startPgbouncer(bin, { serverHost: host.host, serverPort: host.port, user: login.user, password: login.password, poolSize });
  return { connect: () => connected({ host: '127.0.0.1', port: b.port, ...login }), stop: () => b.stop() };
}

/** What the clients saw of `fault` (timed: faultMs) a third of the way into the load, after `prepare`; back when it resolves. */
async function underLoad(entry: Entry, o: FaultsOptions, sql: string, fault: () => Promise<void>, prepare = async (): Promise<void> => {}) {
  const load = queryLoop(() => entry.connect(), o.clients, sql);
  try {
    await sleep((o.seconds * 1000) / 3);
    await prepare();
    const t0 = performance.now();
    await fault();
    const returnedAt = performance.now();
    await sleep((o.seconds * 1000 * 2) / 3);
    const endedAt = performance.now();
    load.stop();
    // Queries a pooler still holds (PgBouncer waits up to its query_wait_timeout) end the run after a grace.
    let records = await Promise.race([load.done, sleep(GRACE_MS).then(() => null)]);
    if (records === null) {
      load.abort();
      records = await load.done;
    }
    return { ...faultFigures(records, returnedAt, endedAt), faultMs: Math.round(returnedAt - t0) };
  } catch (e) {
    load.stop();
    await load.done.catch(() => undefined);
    throw e;
  }
}

async function restartRun(server: PostgresServer, entry: Entry, o: FaultsOptions) {
  const { faultMs, ...figures } = await underLoad(entry, o, 'select $1::int as n', () => server.restart('fast'));
  // serverRestartMs: how long the server itself took to stop and start again (ms).
  return { ...figures, serverRestartMs: faultMs };
}

async function failoverRun(make: MakeEntry, o: FaultsOptions) {
  const primary = await startPostgres();
  let standby: PostgresServer | null = null;
  let entry: Entry | null = null;
  try {
    const login = { user: primary.info.user, password: primary.info.password, database: primary.info.database };
    await withPgClient({ host: primary.info.host, port: primary.info.port, ...login }, (c) => c.query('CREATE TABLE writes (client int, at timestamptz DEFAULT now())'));
    standby = await primary.startStandby();
    entry = await make([hostOf(primary), hostOf(standby)], login);
    const promoted = standby;
    const promote = async (): Promise<void> => {
      await promoted.promote();
      await untilPrimary(promoted, login);
    };
    const { faultMs, ...figures } = await underLoad(entry, o, 'insert into writes (client) values ($1)', promote, () => primary.shutdown('fast'));
    return {
      ...figures,
      /** Writes refused because they reached a read-only server (25006). */
      readOnlyWrites: figures.failedBy['25006'] ?? 0,
      /** From `pg_ctl promote` to the standby answering as a primary (polled directly, ms); recoveryMs counts from then. */
      promotionMs: faultMs,
    };
  } finally {
    await entry?.stop();
    await standby?.stop();
    await primary.stop();
  }
}

/** Polls the promoted server directly (every 5 ms, at most 60 s) until it is no longer in recovery. */
async function untilPrimary(server: PostgresServer, login: Login): Promise<void> {
  await withPgClient({ host: server.info.host, port: server.info.port, ...login }, async (c) => {
    for (const end = performance.now() + 60_000; performance.now() < end; await sleep(5)) {
      if ((await c.query<{ r: boolean }>('select pg_is_in_recovery() as r')).rows[0]?.r === false) return;
    }
    throw new Error('the standby was not promoted within 60 s');
  });
}

const hostOf = (s: PostgresServer): Host => ({ host: s.info.host, port: s.info.port });

export async function runFaultsBench(o: FaultsOptions): Promise<void> {
  const say = (line: string): void => void process.stdout.write(`${line}\n`);
  const pgbouncer = findPgbouncer();
  say(`bench:faults: ${o.clients} clients, ${o.seconds} s per run, pool size ${o.poolSize}; PgBouncer: ${pgbouncer ?? 'not installed (skipped)'}`);
  const targets: [Target, MakeEntry][] = [
    ['quicpoolTcp', (hosts, login) => quicpoolEntry(hosts, login, o.poolSize, 'tcp')],
    ['quicpoolQuic', (hosts, login) => quicpoolEntry(hosts, login, o.poolSize, 'quic')],
  ];
  if (pgbouncer !== null) targets.push(['pgbouncer', (hosts, login) => pgbouncerEntry(pgbouncer, hosts[0]!, login, o.poolSize)]);
  const restart: Partial<Record<Target, Awaited<ReturnType<typeof restartRun>>>> = {};
  const failover: Partial<Record<Target, Awaited<ReturnType<typeof failoverRun>>>> = {};

  const server = await startPostgres();
  try {
    const login = { user: server.info.user, password: server.info.password, database: server.info.database };
    for (const [target, make] of targets) {
      const entry = await make([hostOf(server)], login);
      const f = (restart[target] = await restartRun(server, entry, o).finally(() => entry.stop()));
      say(line('restart', target, f, `server restart ${f.serverRestartMs} ms`));
    }
  } finally {
    await server.stop();
  }

  for (const [target, make] of targets) {
    const f = (failover[target] = await failoverRun(make, o));
    say(line('failover', target, f, `promotion ${f.promotionMs} ms, writes on a read-only server ${f.readOnlyWrites}`));
  }
  if (o.json) say(JSON.stringify({ restart, failover }));
}

function line(fault: string, target: Target, f: FaultFigures, extra: string): string {
  const failed = Object.entries(f.failedBy).map(([k, n]) => `${k} x${n}`).join(', ') || 'none';
  const recovery = f.recoveryMs === null ? 'no answer after it within the run' : `first answer ${f.recoveryMs} ms after it`;
  return `${fault.padEnd(9)} ${target.padEnd(13)} answered ${String(f.answered).padStart(7)}  failed ${String(f.failed).padStart(5)} (${failed})  longest gap ${f.longestGapMs} ms  ${recovery}  ${extra}`;
}
