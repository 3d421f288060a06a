// What the soak runs against: its own Postgres, a login role for the load (pg_stat_activity then counts only the pooler's
// backends), the daemon on TCP and QUIC behind the WAN path (loss of UDP only), its counts from its admin console.
import { mkdtempSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startPostgres } from '@quicpool/pg-fixture';
import { quicPortOf, startDaemon } from '../stack/daemon.js';
import { daemonBehind, openPathHere } from '../stack/wan-path.js';
import { readProcSample } from '../telemetry/proc.js';
import type { SoakOptions } from './options.js';
import type { SoakCounters } from './workload.js';

export const SOAK_ROLE = 'soak_load';
export const SOAK_TABLE = 'soak_rows';
/** The daemon's QUIC idle timeout: bounds how long a dropped connection's sessions linger. */
export const QUIC_IDLE_MS = 5_000;

export type SoakStack = Awaited<ReturnType<typeof startSoakStack>>;

export async function startSoakStack(o: Pick<SoakOptions, 'poolSize' | 'delayMs' | 'loss' | 'path'>, log: (line: string) => void) {
  // What is up so far, stopped in reverse order by close(), or at once when the set-up fails.
  const undo: Array<() => Promise<unknown>> = [];
  const close = async (): Promise<void> => {
    for (const step of undo.splice(0).reverse()) await step().catch(() => undefined);
  };
  try {
    const server = await startPostgres();
    undo.push(() => server.stop());
    const password = randomBytes(12).toString('hex');
    const monitor = new pg.Client({ host: server.info.host, port: server.info.port, database: server.info.database, user: server.info.user, password: server.info.password });
    monitor.on('error', () => undefined);
    await monitor.connect();
    undo.push(() => monitor.end());
    await monitor.query(`create role ${SOAK_ROLE} login password '${password}'`);
    await monitor.query(`create table ${SOAK_TABLE} (worker int not null, n int not null, who text not null)`);
    await monitor.query(`grant all on table ${SOAK_TABLE} to ${SOAK_ROLE}`);
    const stateDir = mkdtempSync(join(tmpdir(), 'quicpool-soak-'));
    undo.push(async () => rmSync(stateDir, { recursive: true, force: true }));
    const path = await openPathHere(o.path, { delayMs: o.delayMs, lossRate: o.loss, lossUdpOnly: true }, log);
    undo.push(() => path.close());
    const daemon = await startDaemon({
      ...daemonBehind(path, server.info),
      users: { [SOAK_ROLE]: { password } },
      adminUsers: [SOAK_ROLE],
      poolSize: o.poolSize,
      stateDir,
      settings: { quic: { idle_timeout_ms: QUIC_IDLE_MS }, pool: { query_wait_timeout_ms: 20_000 } },
    });
    undo.push(() => daemon.stop());
    const admin = new pg.Client({ host: path.serverHost, port: daemon.tcpPort, user: SOAK_ROLE, password, database: 'quicpool' });
    admin.on('error', () => undefined);
    await admin.connect();
    undo.push(() => admin.end());
    const tcp = await path.endpoint('tcp', daemon.tcpPort);
    const quic = await path.endpoint('udp', quicPortOf(daemon));
    log(`WAN: ${path.description}`);
    return {
      // tcp, quic: the daemon's ports across the path; monitor: a direct superuser connection, to count and kill backends.
      pg: server, path, tcp, quic, caPem: daemon.caPem, monitor,
      login: { user: SOAK_ROLE, password, database: server.info.database },
      /** One sample of the soak: `started`, when the load started (performance.now()); `counters`, the load's. */
      sample: async (started: number, counters: SoakCounters) => {
        const memory = process.memoryUsage();
        const clients = await admin.query('SHOW CLIENTS');
        const quicStreams = await admin.query<{ streams: string | number }>('SHOW QUIC');
        const daemonRssBytes = readProcSample(daemon.pid)?.rssBytes ?? 0;
        const t = (performance.now() - started) / 1000;
        const backends = await monitor.query<{ n: number }>(
          `select count(*)::int as n from pg_stat_activity where usename = $1 and backend_type = 'client backend'`, [SOAK_ROLE]);
        return {
          /** Seconds since the load started. */
          t,
          /** The client library here and the daemon: what a leak in either would grow. */
          rssMb: (memory.rss + daemonRssBytes) / 2 ** 20,
          heapUsedMb: memory.heapUsed / 2 ** 20,
          /** QUIC streams open at the daemon's listener. */
          streams: quicStreams.rows.reduce((n, r) => n + Number(r.streams), 0),
          /** Backends of the soak role in pg_stat_activity. */
          backends: backends.rows[0]?.n ?? 0,
          /** Client sessions open in the daemon (this console's own not counted). */
          clients: Math.max(0, clients.rows.length - 1),
          /** Cumulative counts. */
          queries: counters.queries,
          errors: counters.errors,
          unexpectedErrors: counters.unexpectedErrors,
          mismatches: counters.mismatches,
        };
      },
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}
