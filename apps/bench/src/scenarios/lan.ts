// `lan`: no added delay. The same closed loop of our load generator (node-postgres sessions, the
// workload query) against Postgres directly, through quicpool over TCP, through quicpool over QUIC
// streams, and through PgBouncer (when installed), one after the other in one run; then pgbench
// with the same query against every target it can reach (it speaks no QUIC). quicpool and
// PgBouncer run in their own processes with the same pool size and transaction pooling.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findPgbench, parseSummary, runPgbench } from '../lan/pgbench.js';
import { findPgbouncer, startPgbouncer } from '../lan/pgbouncer.js';
import { pgPoolVariant } from '../load/pg-pool-variant.js';
import { WORKLOAD_SQL } from '../load/variant.js';
import { runClosedLoopVariant } from './run-variant.js';
import { pgTarget, POOL_SIZE, quicPlan, tcpPlan } from './stack/quicpool-plans.js';
import type { PreparedVariant, Scenario, ScenarioContext, ScenarioResult, VariantRun } from './types.js';

const CLIENTS = 50;
/**
 * Every variant warms up this long before its window: V8 compiles a path's hot functions during
 * its first second or so, and the QUIC path has more of them (the quiche binding's calls, the
 * endpoint); with 0.5 s the 2-s window of --quick measured its compilation (QUIC/TCP 0.5-0.9x
 * at 0.5 s against 0.95-1.2x at 2 s in runs on 2026-12-01).
 */
const WARMUP_MS = 2_000;

type Target = 'direct' | 'quicpool-tcp' | 'quicpool-quic' | 'pgbouncer';

async function measure(ctx: ScenarioContext, name: Target, prepared: PreparedVariant, durationMs: number): Promise<VariantRun> {
  const { variant } = prepared;
  try {
    const { run } = await runClosedLoopVariant(ctx, {
      scenario: 'lan', name, variant, workers: variant.sessions, durationMs, warmupMs: WARMUP_MS,
      poolerPid: prepared.poolerPid, countFds: true,
    });
    return run;
  } finally {
    await variant.close();
    await prepared.dispose();
  }
}

const qps = (run: VariantRun): number => (run.durationMs > 0 ? Math.round((run.processed * 1000) / run.durationMs) : 0);

export const lanScenario: Scenario = {
  name: 'lan',
  title: 'LAN: direct vs quicpool TCP vs quicpool QUIC vs PgBouncer',
  async run(ctx: ScenarioContext): Promise<ScenarioResult> {
    if (ctx.script === null) return { kind: 'unavailable', name: 'lan', title: this.title, needs: 'the built bench program (dist/bin/bench.js) to start the pooler process' };
    const seconds = ctx.overrides?.lanSeconds ?? (ctx.quick ? 2 : 10);
    const clients = ctx.overrides?.sessionScale === undefined ? CLIENTS : Math.max(2, Math.round(CLIENTS * ctx.overrides.sessionScale ** 0.5));
    const pg = pgTarget(ctx.pg);
    // The same session count over QUIC: up to 40 streams per connection, as many connections as needed.
    let quicConnections = Math.ceil(clients / 40);
    while (clients % quicConnections !== 0) quicConnections += 1;
    const notes: string[] = [];
    const pgbouncerBin = findPgbouncer();
    if (pgbouncerBin === null) notes.push('PgBouncer is not installed (apt-get install pgbouncer): skipped.');
    const pgbench = findPgbench();
    if (pgbench === null) notes.push('pgbench is not installed (apt-get install postgresql-client): its column is skipped.');
    const runs: VariantRun[] = [];
    const tps: Record<string, number | null> = { direct: null, 'quicpool-tcp': null, 'quicpool-quic': null, pgbouncer: null };
    const benchTps: Record<string, number | null> = { direct: null, 'quicpool-tcp': null, pgbouncer: null };
    const scriptDir = mkdtempSync(join(tmpdir(), 'quicpool-bench-lan-'));
    const scriptFile = join(scriptDir, 'workload.sql');
    writeFileSync(scriptFile, `${WORKLOAD_SQL};\n`);
    const pgbenchOn = async (target: string, port: number): Promise<void> => {
      if (pgbench === null) return;
      ctx.log(`lan: pgbench -n -M simple -f workload.sql -c ${clients} -j 2 -T ${seconds} -> ${target}`);
      const out = await runPgbench(pgbench, { ...pg, port, host: '127.0.0.1' }, ['-n', '-M', 'simple', '-f', scriptFile, '-c', String(clients), '-j', '2', '-T', String(seconds)], (seconds + 60) * 1000);
      benchTps[target] = Math.round(parseSummary(out).tps);
    };
    const hostPort = { host: pg.host === 'localhost' ? '127.0.0.1' : pg.host, port: pg.port };
    try {
      const steps: Array<{ name: Target; prepare: () => Promise<PreparedVariant>; pgbenchPort: (p: PreparedVariant) => number | null }> = [
        {
          name: 'direct',
          prepare: async () => ({
            variant: pgPoolVariant({ name: 'direct', sessions: clients, connectionConfig: ctx.pg }),
            poolerPid: null,
            rttMs: null,
            dispose: async () => undefined,
          }),
          pgbenchPort: () => hostPort.port,
        },
        { name: 'quicpool-tcp', prepare: () => tcpPlan({ name: 'quicpool-tcp', sessions: clients, tls: false, path: { kind: 'lan' } }).prepare(ctx), pgbenchPort: (p) => Number(p.info?.().port ?? 0) || null },
        { name: 'quicpool-quic', prepare: () => quicPlan({ name: 'quicpool-quic', connections: quicConnections, streamsPerConnection: clients / quicConnections, path: { kind: 'lan' } }).prepare(ctx), pgbenchPort: () => null },
      ];
      if (pgbouncerBin !== null) {
        steps.push({
          name: 'pgbouncer',
          prepare: async () => {
            const bouncer = await startPgbouncer(pgbouncerBin, { serverHost: hostPort.host, serverPort: hostPort.port, user: pg.user, password: pg.password, poolSize: POOL_SIZE });
            notes.push(`PgBouncer: ${bouncer.version}, transaction pooling, pool size ${POOL_SIZE}.`);
            return {
              variant: pgPoolVariant({ name: 'pgbouncer', sessions: clients, connectionConfig: { host: '127.0.0.1', port: bouncer.port, user: pg.user, password: pg.password, database: pg.database } }),
              poolerPid: bouncer.pid,
              rttMs: null,
              dispose: () => bouncer.stop(),
              info: () => ({ port: bouncer.port }),
            };
          },
          pgbenchPort: (p) => Number(p.info?.().port ?? 0) || null,
        });
      }
      for (const step of steps) {
        ctx.log(`lan: ${step.name}, closed loop, ${clients} sessions, ${seconds} s`);
        const prepared = await step.prepare();
        // pgbench runs against the same process before our generator closes it.
        const port = step.pgbenchPort(prepared);
        if (port !== null) {
          try {
            await pgbenchOn(step.name, port);
          } catch (error) {
            notes.push(`pgbench -> ${step.name} failed: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`);
          }
        }
        const run = await measure(ctx, step.name, prepared, seconds * 1000);
        runs.push(run);
        tps[step.name] = qps(run);
      }
    } finally {
      rmSync(scriptDir, { recursive: true, force: true });
    }
    const r = (a: number | null | undefined, b: number | null | undefined): string => (a == null || b == null || b === 0 ? 'n/a' : `${(a / b).toFixed(2)}x`);
    notes.unshift(
      `Our generator (closed loop, ${clients} sessions, ${seconds} s each): quicpool TCP / PgBouncer = ${r(tps['quicpool-tcp'], tps.pgbouncer)} (target >= 0.75x); quicpool QUIC / quicpool TCP = ${r(tps['quicpool-quic'], tps['quicpool-tcp'])} (target >= 0.75x); quicpool TCP / direct = ${r(tps['quicpool-tcp'], tps.direct)}.`,
      pgbench === null ? 'pgbench: not installed.' : `pgbench (same query, simple protocol, -c ${clients} -j 2): quicpool TCP / PgBouncer = ${r(benchTps['quicpool-tcp'], benchTps.pgbouncer)}; quicpool TCP / direct = ${r(benchTps['quicpool-tcp'], benchTps.direct)}.`,
    );
    return {
      kind: 'lan',
      name: 'lan',
      title: this.title,
      description: `No added delay, everything on loopback. Each target in turn: our load generator as a closed loop (${clients} node-postgres sessions, the workload query), then pgbench with the same query where it can connect (not QUIC). quicpool and PgBouncer: transaction pooling, ${POOL_SIZE} server connections, each in its own process.`,
      tps,
      pgbench: pgbench === null ? null : benchTps,
      runs,
      notes,
    };
  },
};
