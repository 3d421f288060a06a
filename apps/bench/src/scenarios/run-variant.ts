// One variant run, from the parent: a fresh WAN path, a fresh daemon (or PgBouncer) behind it, the client process beyond;
// each row gets the other processes' CPU of its second (/proc), the path's RTT and drops come after. All stopped, whatever fails.
import { BENCH_WORKER_FLAG } from '../commands/worker-flags.js';
import type { CongestionControl } from '../netpath/netpath.js';
import { startWorkerProcess, jsonLine } from '../process/worker-process.js';
import { daemonCertificates, quicPortOf, startDaemon } from '../stack/daemon.js';
import type { RunningDaemon } from '../stack/daemon.js';
import { startPgbouncer } from '../stack/pgbouncer.js';
import type { PgTarget } from '../stack/postgres.js';
import type { PathMode, VariantPath } from '../stack/wan-path.js';
import { NO_PATH, openPath } from '../stack/wan-path.js';
import type { TelemetryRow } from '../telemetry/csv.js';
import type { CpuInterval } from '../telemetry/process-cpu.js';
import { ProcessCpu } from '../telemetry/process-cpu.js';
import { countProcFds } from '../telemetry/proc.js';
import type { ChildConfig, ChildMessage, ClientResult } from './variant-child.js';
import type { PhasedRow, ScenarioPlan, VariantPlan } from './types.js';

/** Server connections per pool in every daemon the bench starts (as PgBouncer's default_pool_size). */
const POOL_SIZE = 20;

export interface BenchContext {
  readonly pg: PgTarget;
  /** The postmaster, whose processes' CPU is summed; null when Postgres is not on this machine. */
  readonly postgresPid: number | null;
  readonly pathMode: PathMode;
  /** The quicpool-bench program: the client process runs it as a worker. */
  readonly script: string;
  /** The daemon's state folder (certificate, ticket key), shared by every run. */
  readonly stateDir: string;
  /** The pgbouncer binary, for variants of the 'pgbouncer' route (null: not installed). */
  readonly pgbouncer: string | null;
  readonly congestionControl: CongestionControl;
  /** Seed of the path's random loss: the same for every variant. */
  readonly seed: number;
  readonly workers: number;
  readonly log: (line: string) => void;
  /** Every row as it arrives (progress). */
  readonly onRow?: (plan: ScenarioPlan, variant: VariantPlan, round: number, row: PhasedRow) => void;
}

/** The pooler process a variant's clients reach: the quicpool daemon or PgBouncer (quicPort null). */
type Pooler = Pick<RunningDaemon, 'pid' | 'tcpPort' | 'quicPort' | 'caPem' | 'stop'>;

const perQuery = (ms: number | null, processed: number): number | null => (ms === null || processed === 0 ? null : Math.round((ms * 10_000) / processed) / 10);
const ms = (v: number | null): number | null => (v === null ? null : Math.round(v));

/** The client's row with the other processes' CPU of the same interval. */
export function withProcessCpu(row: TelemetryRow, c: CpuInterval): TelemetryRow {
  const processed = row.number_of_queries_processed ?? 0;
  const known = [row.cpu_milliseconds, c.forwarderMs, c.poolerMs, c.postgresMs].reduce<number>((sum, v) => sum + (v ?? 0), 0);
  return {
    ...row,
    pooler_cpu_milliseconds: ms(c.poolerMs),
    pooler_rss_bytes: c.poolerRssBytes,
    forwarder_cpu_milliseconds: ms(c.forwarderMs),
    postgres_cpu_milliseconds: ms(c.postgresMs),
    other_cpu_milliseconds: c.machineMs === null ? null : Math.max(0, Math.round(c.machineMs - known)),
    client_cpu_us_per_query: perQuery(row.cpu_milliseconds, processed),
    forwarder_cpu_us_per_query: perQuery(c.forwarderMs, processed),
    pooler_cpu_us_per_query: perQuery(c.poolerMs, processed),
    postgres_cpu_us_per_query: perQuery(c.postgresMs, processed),
  };
}

function loadLimitMs(plan: ScenarioPlan): number {
  const l = plan.load;
  const seconds = l.kind === 'open' ? (l.probe?.seconds ?? 0) + l.ramp.durationMs / 1000 : l.warmupSeconds + l.steps.reduce((s, x) => s + x.seconds, 0);
  // Opening thousands of TLS sessions over the WAN, the load, the drain (bounded by the timeout).
  return seconds * 1000 + l.timeoutMs + 240_000;
}

async function runClient(ctx: BenchContext, plan: ScenarioPlan, variant: VariantPlan, round: number, path: VariantPath, pooler: Pooler | null): Promise<{ result: ClientResult; rows: PhasedRow[]; poolerFds: number | null }> {
  const pg = ctx.pg;
  const transport = variant.client.kind === 'pg' || variant.client.kind === 'connect-tcp' ? 'tcp' : 'udp';
  const endpoint = pooler === null ? { host: pg.host, port: pg.port } : await path.endpoint(transport, transport === 'tcp' ? pooler.tcpPort : quicPortOf(pooler));
  const config: ChildConfig = {
    variant: variant.name,
    client: variant.client,
    load: plan.load,
    target: { ...endpoint, caPem: pooler?.caPem ?? null, serverName: 'localhost', user: pg.user, password: pg.password, database: pg.database, congestionControl: ctx.congestionControl },
  };
  const { command, args } = path.clientCommand([ctx.script, BENCH_WORKER_FLAG, 'variant', JSON.stringify(config)]);
  const rows: PhasedRow[] = [];
  let cpu: ProcessCpu | null = null;
  let result: ClientResult | null = null;
  const message = (line: string): ChildMessage => (jsonLine(line) ?? {}) as ChildMessage;
  const child = await startWorkerProcess({
    name: `the ${plan.name}/${variant.name} client`,
    command,
    args,
    startTimeoutMs: 240_000,
    stderr: 'capture',
    ready: (line) => {
      if (message(line).ready === undefined) return null;
      // Here, not after the await: the next lines may be handled before the await returns.
      cpu = new ProcessCpu({ forwarder: path.forwarderPid(), pooler: pooler?.pid ?? null, postgres: ctx.postgresPid });
      return 1;
    },
    onLine: (line) => {
      const m = message(line);
      if (m.row !== undefined && cpu !== null) {
        const row: PhasedRow = { ...m.row, row: withProcessCpu(m.row.row, cpu.next()) };
        rows.push(row);
        ctx.onRow?.(plan, variant, round, row);
      }
      if (m.result !== undefined) result = m.result;
    },
  });
  try {
    const poolerFds = pooler === null ? null : countProcFds(pooler.pid);
    const limit = loadLimitMs(plan);
    let timer: NodeJS.Timeout | undefined;
    const code = await Promise.race([child.exited, new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), limit)))]);
    clearTimeout(timer);
    await child.outputEnded;
    const done: ClientResult | null = result;
    if (done === null) throw new Error(`${plan.name}/${variant.name}: the client ${code === 'late' ? `sent no result within ${limit / 1000} s` : `exited (${code ?? 'signal'}) without a result`}: ${child.stderrTail().trim()}`);
    return { result: done, rows, poolerFds };
  } finally {
    await child.stop();
  }
}

export async function runVariant(ctx: BenchContext, plan: ScenarioPlan, variant: VariantPlan, round: number) {
  const wan = plan.wan;
  const path = wan === null || variant.route === 'postgres' ? NO_PATH : await openPath(ctx.pathMode, { ...wan, seed: ctx.seed, congestionControl: ctx.congestionControl });
  try {
    const pooler = await startPooler(ctx, variant, path.serverHost);
    const run = await runClient(ctx, plan, variant, round, path, pooler).finally(() => pooler?.stop());
    // Measured after the load, on the same path: what the queries crossed, undisturbed by them.
    const facts = await path.facts();
    const withRtt = (rows: readonly PhasedRow[]): TelemetryRow[] => rows.map((r) => ({ ...r.row, rtt_ms: facts.rttMs }));
    const measured = run.rows.filter((r) => r.phase !== 'probe');
    return {
      scenario: plan.name,
      variant: variant.name,
      round,
      result: run.result,
      /** One row per second of the load and its drain (the CSV). */
      rows: withRtt(measured),
      /** Rows of the load itself (the rest are the drain). */
      loadRows: measured.filter((r) => r.phase === 'load').length,
      /** Closed loop: the step of each row. */
      rowSteps: measured.map((r) => r.step),
      /** The constant-rate probe's rows (not in the CSV). */
      probeRows: withRtt(run.rows.filter((r) => r.phase === 'probe')),
      path: facts,
      /** The daemon's open file descriptors with every session open (null: no daemon). */
      poolerFds: run.poolerFds,
    };
  } finally {
    await path.close();
  }
}

/** The route's pooler, listening where only the path reaches it; null for the 'postgres' route. */
async function startPooler(ctx: BenchContext, variant: VariantPlan, listenHost: string): Promise<Pooler | null> {
  const { pg, stateDir } = ctx;
  switch (variant.route) {
    case 'postgres':
      return null;
    case 'pooler':
      return startDaemon({
        listenHost,
        upstream: { host: pg.host, port: pg.port },
        users: { [pg.user]: { password: pg.password } },
        poolSize: POOL_SIZE,
        stateDir,
        workers: ctx.workers,
      });
    case 'pgbouncer': {
      if (ctx.pgbouncer === null) throw new Error('--pgbouncer: PgBouncer is not installed (apt-get install pgbouncer)');
      // The daemon's development certificate (the quicpool variants before it created it): clients verify both poolers by one CA.
      const { caPem, certPem, keyPem } = daemonCertificates(stateDir);
      const server = { serverHost: pg.host, serverPort: pg.port, user: pg.user, password: pg.password };
      const pb = await startPgbouncer(ctx.pgbouncer, { ...server, poolSize: POOL_SIZE, listenHost, clientTls: { certPem, keyPem } });
      return { pid: pb.pid, tcpPort: pb.port, quicPort: null, caPem, stop: () => pb.stop() };
    }
  }
}
