// `pnpm bench:client`: what the quicpool client buys a far-away Node.js application, in one run. Postgres <-
// the daemon (TCP with TLS after SSLRequest, and QUIC) <- the WAN path <- this process (pg, @quicpool/client):
//   (a) cold start to first row: TCP+TLS vs QUIC full handshake vs QUIC 0-RTT, trust and SCRAM (first-row.ts)
//   (b) idle sessions: memory and fds per connected client, straight to the daemon (idle-sessions.ts)
//   (c) 2,000 sessions x 1 query from nothing open: time to drain
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { QuicPool, SessionManager } from '@quicpool/client';
import { startPostgres } from '@quicpool/pg-fixture';
import { describeMachine, load1, machineLine } from '../report/machine.js';
import { round2 as r2 } from '../report/round.js';
import { quicPortOf, startDaemon } from '../stack/daemon.js';
import type { RunningDaemon } from '../stack/daemon.js';
import { daemonBehind, openPathHere } from '../stack/wan-path.js';
import type { PathMode, VariantPath } from '../stack/wan-path.js';
import { openFileLimit, readProcSample } from '../telemetry/proc.js';
import type { BenchTargets, Login } from './connect.js';
import { quicManagerOptions, tlsClientConfig } from './connect.js';
import { byColdPath, COLD_PATHS, measureColdStart, measurePathRtts } from './first-row.js';
import type { ColdPath, ColdStartResult } from './first-row.js';
import { measureIdle } from './idle-sessions.js';
import type { IdleResult } from './idle-sessions.js';

export interface ClientBenchOptions {
  readonly oneWayMs: number;
  readonly trials: number;
  readonly sessions: number;
  readonly quicConnections: number;
  readonly streamsPerConnection: number;
  readonly poolSize: number;
  readonly json: boolean;
  /** Which measurements to run (all three by default; the JSON then has only theirs). */
  readonly parts: { readonly cold: boolean; readonly idle: boolean; readonly drain: boolean };
  readonly path: PathMode | 'auto';
  /** The quicpool-bench program: run as the idle workers. */
  readonly script: string;
}

const log = (s: string): void => void process.stderr.write(`${s}\n`);

type DrainCost = Awaited<ReturnType<typeof drain>>;

/** (c) `sessions` queries at once on a pool with nothing open, and the CPU it cost the client and the pooler, `open` to `close`. */
async function drain(poolerPid: number, sessions: number, open: () => { pool: pg.Pool; close: () => Promise<void> }) {
  const c0 = process.cpuUsage();
  const p0 = readProcSample(poolerPid);
  const { pool, close } = open();
  let failed = 0;
  let firstError: string | null = null;
  pool.on('error', () => undefined);
  let ms: number;
  try {
    const t0 = performance.now();
    await Promise.all(Array.from({ length: sessions }, (_, i) =>
      pool.query('select $1::int as i', [i]).then(() => undefined, (e: Error) => {
        failed++;
        firstError ??= e.message;
      })));
    ms = performance.now() - t0;
  } finally {
    await close();
  }
  const c = process.cpuUsage(c0);
  const p1 = readProcSample(poolerPid);
  const poolerCpuMs = p0 === null || p1 === null ? null : Math.round(p1.cpuMs - p0.cpuMs);
  return { ms, failed, firstError, clientCpuMs: Math.round((c.user + c.system) / 1000), poolerCpuMs };
}

export async function runClientBench(o: ClientBenchOptions): Promise<void> {
  const need = o.sessions + 512;
  const limit = openFileLimit();
  if (limit !== null && limit < need) {
    throw new Error(`the open-file limit is ${limit}; ${o.sessions} TCP sessions need about ${need}: run \`ulimit -n ${need}\` (or higher) first`);
  }
  const machine = describeMachine();
  log(`${machineLine(machine)}; open-file limit ${limit ?? 'unknown'}`);
  const postgres = await startPostgres({ settings: { max_connections: String(Math.max(100, o.poolSize * 2 + 20)) } });
  let pooler: RunningDaemon | null = null;
  let readOnlyPooler: RunningDaemon | null = null;
  const stateDir = mkdtempSync(join(tmpdir(), 'quicpool-bench-client-'));
  let path: VariantPath | null = null;
  try {
    const info = postgres.info;
    const trust: Login = { user: info.trustUser, database: info.database };
    const scram: Login = { user: info.user, password: info.password, database: info.database };
    path = await openPathHere(o.path, { delayMs: o.oneWayMs }, log);
    const daemon = {
      ...daemonBehind(path, info),
      users: { [info.trustUser]: { auth: 'trust' }, [info.user]: { password: info.password } },
    } as const;
    pooler = await startDaemon({
      ...daemon,
      poolSize: o.poolSize,
      stateDir,
      // 2,000 TLS handshakes at once on a busy 2-core machine take a while.
      settings: { limits: { auth_timeout_ms: 120_000 }, pool: { query_wait_timeout_ms: 60_000 } },
    });
    const direct: BenchTargets = { host: path.serverHost, tlsPort: pooler.tcpPort, quicPort: quicPortOf(pooler), caPem: pooler.caPem };
    const wanTcp = await path.endpoint('tcp', pooler.tcpPort);
    const wanUdp = await path.endpoint('udp', quicPortOf(pooler));
    const wan: BenchTargets = { ...direct, host: wanTcp.host, tlsPort: wanTcp.port, quicPort: wanUdp.port };
    // A second daemon with the read-only 0-RTT policy (only the cold start's read-only path uses it).
    let readOnlyWan: BenchTargets = wan;
    if (o.parts.cold) {
      readOnlyPooler = await startDaemon({ ...daemon, poolSize: 4, stateDir: join(stateDir, 'read-only'), settings: { quic: { early_data: 'read-only' } } });
      const roUdp = await path.endpoint('udp', quicPortOf(readOnlyPooler));
      readOnlyWan = { ...wan, quicPort: roUdp.port, caPem: readOnlyPooler.caPem };
    }
    log(`WAN: ${path.description}`);

    const loadStart = load1();
    const rtt = await measurePathRtts(wan, trust);
    log(`measured RTT (select 1 on an open session): TCP+TLS ${rtt.tcpMs.toFixed(2)} ms, QUIC ${rtt.quicMs.toFixed(2)} ms`);
    let cold: { trust: ColdStartResult; scram: ColdStartResult } | null = null;
    if (o.parts.cold) {
      log(`(a) cold start to first row, ${o.trials} trials, trust ...`);
      const coldTrust = await measureColdStart(wan, readOnlyWan, trust, rtt, o.trials, log);
      log(`(a) cold start to first row, ${o.trials} trials, SCRAM-SHA-256 ...`);
      cold = { trust: coldTrust, scram: await measureColdStart(wan, readOnlyWan, scram, rtt, o.trials, log) };
    }
    let idle: { tcp: IdleResult; quic: IdleResult } | null = null;
    if (o.parts.idle) {
      log(`(b) ${o.sessions} idle TCP+TLS sessions (own process) ...`);
      const idleBase = { sessions: o.sessions, warmup: 50, targets: direct, login: trust, quicConnections: o.quicConnections, streamsPerConnection: o.streamsPerConnection };
      const idleTcp = await measureIdle(o.script, { ...idleBase, transport: 'tcp' }, path.serverNs);
      log(`(b) ${o.sessions} idle QUIC sessions (${o.quicConnections} connections x ${o.streamsPerConnection} streams, own process) ...`);
      idle = { tcp: idleTcp, quic: await measureIdle(o.script, { ...idleBase, transport: 'quic' }, path.serverNs) };
    }
    let drained: { tcp: DrainCost; quic: DrainCost } | null = null;
    if (o.parts.drain) {
      log(`(c) ${o.sessions} sessions x 1 query, TCP+TLS ...`);
      const tcp = await drain(pooler.pid, o.sessions, () => {
        const pool = new pg.Pool({ ...tlsClientConfig(wan, trust), max: o.sessions, idleTimeoutMillis: 0 });
        return { pool, close: () => pool.end() };
      });
      log(`(c) ${o.sessions} sessions x 1 query, QUIC ...`);
      const quic = await drain(pooler.pid, o.sessions, () => {
        const manager = new SessionManager(quicManagerOptions(wan, { maxConnections: o.quicConnections, streamsPerConnection: o.streamsPerConnection }));
        const pool = new QuicPool({ ...trust, max: o.sessions, idleTimeoutMillis: 0, quic: manager, fastStart: true });
        return { pool, close: () => pool.end().then(() => manager.close()) };
      });
      drained = { tcp, quic };
    }
    const loadEnd = load1();
    const wanText = `WAN ${o.oneWayMs} ms each way, ${path.mode === 'packet' ? 'the packet path' : 'the user-space relay'}`;
    const rtts = `measured RTT ${rtt.tcpMs.toFixed(1)} ms (TCP+TLS path), ${rtt.quicMs.toFixed(1)} ms (QUIC path)`;
    const out = ['', `bench:client — ${wanText}; ${rtts}; load average ${loadStart} -> ${loadEnd}`, ''];
    if (cold !== null) coldLines(out, o, cold.trust, cold.scram, path.mode);
    if (idle !== null) idleLines(out, o, idle.tcp, idle.quic);
    if (drained !== null) drainLines(out, o, drained.tcp, drained.quic);
    process.stdout.write(`${out.join('\n')}\n`);
    if (o.json) {
      const each = (v: Record<ColdPath, number>): Record<ColdPath, number> => byColdPath((p) => r2(v[p]));
      process.stdout.write(`${JSON.stringify({
        bench: 'client',
        wanPath: path.mode,
        configuredOneWayMs: o.oneWayMs,
        measuredRttMs: { tcpTls: r2(rtt.tcpMs), quic: r2(rtt.quicMs) },
        ...(cold !== null ? {
          firstRowRtts: each(cold.trust.rtts),
          firstRowMs: each(cold.trust.ms),
          firstRowRttsScram: each(cold.scram.rtts),
          firstRowMsScram: each(cold.scram.ms),
          pipelined: { trust: cold.trust.pipelined, scram: cold.scram.pipelined },
          zeroRtt: {
            resumedEveryTime: cold.trust.resumedEveryTime && cold.scram.resumedEveryTime,
            earlyDataEveryTime: cold.trust.earlyDataEveryTime && cold.scram.earlyDataEveryTime,
          },
        } : {}),
        ...(idle !== null ? { idleSessionBytes: { tcp: idle.tcp.bytesPerSession, quic: idle.quic.bytesPerSession }, idle } : {}),
        ...(drained !== null ? {
          drainMs: { tcp: Math.round(drained.tcp.ms), quic: Math.round(drained.quic.ms) },
          drainFailed: { tcp: drained.tcp.failed, quic: drained.quic.failed },
          drainCpuMs: {
            client: { tcp: drained.tcp.clientCpuMs, quic: drained.quic.clientCpuMs },
            pooler: { tcp: drained.tcp.poolerCpuMs, quic: drained.quic.poolerCpuMs },
          },
        } : {}),
        sessions: o.sessions,
        quic: { connections: o.quicConnections, streamsPerConnection: o.streamsPerConnection },
        trials: o.trials,
        loadAverage1m: { start: loadStart, end: loadEnd },
        machine,
      })}\n`);
    }
  } finally {
    await pooler?.stop();
    await readOnlyPooler?.stop();
    await path?.close();
    await postgres.stop();
    rmSync(stateDir, { recursive: true, force: true });
  }
}

const kb = (b: number): string => `${(b / 1024).toFixed(1)} KiB`;
const ratio = (q: number, t: number): string => (t === 0 ? '-' : (q / t).toFixed(2));
function row(out: string[], label: string, t: string, q: string, r = ''): void {
  out.push(`    ${label.padEnd(44)}${t.padStart(14)}${q.padStart(17)}${r.padStart(11)}`);
}

function coldLines(out: string[], o: ClientBenchOptions, trust: ColdStartResult, scram: ColdStartResult, mode: VariantPath['mode']): void {
  out.push(`(a) cold start to first row (median of ${o.trials})            TCP+TLS         QUIC full        QUIC 0-RTT  0-RTT, pg startup  0-RTT, read-only`);
  for (const [name, c] of [['trust', trust], ['SCRAM-SHA-256', scram]] as const) {
    const f = (p: ColdPath): string => `${c.rtts[p].toFixed(2)} RTT ${c.ms[p].toFixed(0).padStart(4)} ms`;
    out.push(`    ${name.padEnd(32)}${COLD_PATHS.map((p) => f(p).padStart(18)).join('')}`);
  }
  const zr = trust.resumedEveryTime && scram.resumedEveryTime ? 'yes' : 'NO';
  const ed = trust.earlyDataEveryTime && scram.earlyDataEveryTime ? 'yes' : 'NO';
  out.push(`    0-RTT runs resumed: ${zr}; their StartupMessage left as early data: ${ed}`);
  const pl = (c: ColdStartResult): string => `full ${c.pipelined.quic ? 'yes' : 'no'}, 0-RTT ${c.pipelined.quic0rtt ? 'yes' : 'no'}`;
  out.push(`    first query sent behind the last login message (fast start): trust ${pl(trust)}; SCRAM ${pl(scram)}`);
  out.push('    "0-RTT, pg startup": the same resumed connection with fastStart: false (the query waits for ReadyForQuery)');
  out.push('    "0-RTT, read-only": fastStart: \'early-data\' (StartupMessage and select 1 in the 0-RTT flight) to a second daemon with quic.early_data = "read-only"');
  out.push(
    mode === 'relay'
      ? "    TCP: the relay accepts the connection locally, so the TCP handshake's own round trip is not emulated (a real path adds 1 RTT); TLS starts after SSLRequest (+1 RTT), the only way the daemon serves it"
      : "    TCP: the handshake's own round trip is charged (packet path); TLS starts after SSLRequest (+1 RTT), the only way the daemon serves it",
  );
  out.push('');
}

function idleLines(out: string[], o: ClientBenchOptions, tcp: IdleResult, quic: IdleResult): void {
  out.push(`(b) per idle session (${tcp.sessions} added, connected pg.Client)    TCP+TLS             QUIC   QUIC/TCP`);
  row(out, 'client RSS', kb(tcp.rssBytesPerSession), kb(quic.rssBytesPerSession), ratio(quic.rssBytesPerSession, tcp.rssBytesPerSession));
  row(out, '  of which V8 heap (JS objects)', kb(tcp.heapBytesPerSession), kb(quic.heapBytesPerSession), ratio(quic.heapBytesPerSession, tcp.heapBytesPerSession));
  row(out, '  of which Buffers (memoryUsage().external)', kb(tcp.externalBytesPerSession), kb(quic.externalBytesPerSession));
  row(out, 'kernel socket memory (sockstat mem, all ends)', kb(tcp.kernelBytesPerSession), kb(quic.kernelBytesPerSession));
  row(out, 'total', kb(tcp.bytesPerSession), kb(quic.bytesPerSession), ratio(quic.bytesPerSession, tcp.bytesPerSession));
  row(out, 'file descriptors (client)', tcp.fdsPerSession.toFixed(3), quic.fdsPerSession.toFixed(3));
  row(out, 'sockets in use (system, sockstat inuse)', tcp.socketsPerSession.toFixed(3), quic.socketsPerSession.toFixed(3));
  row(out, `client totals at ${o.sessions} sessions: fds / RSS`, `${tcp.fds} / ${(tcp.rssBytes / 2 ** 20).toFixed(0)} MiB`, `${quic.fds} / ${(quic.rssBytes / 2 ** 20).toFixed(0)} MiB`);
  out.push(`    QUIC: ${o.quicConnections} connections x ${o.streamsPerConnection} streams; straight to the pooler (idle cost does not depend on the path)`);
  out.push('');
}

function drainLines(out: string[], o: ClientBenchOptions, tcp: DrainCost, quic: DrainCost): void {
  out.push(`(c) ${o.sessions} sessions x 1 query from nothing open             TCP+TLS             QUIC`);
  row(out, 'time to drain', `${tcp.ms.toFixed(0)} ms`, `${quic.ms.toFixed(0)} ms`, ratio(quic.ms, tcp.ms));
  row(out, 'client CPU', `${tcp.clientCpuMs} ms`, `${quic.clientCpuMs} ms`, ratio(quic.clientCpuMs, tcp.clientCpuMs));
  const pc = (d: DrainCost): string => (d.poolerCpuMs === null ? '?' : `${d.poolerCpuMs} ms`);
  row(out, 'pooler CPU', pc(tcp), pc(quic), tcp.poolerCpuMs === null || quic.poolerCpuMs === null ? '' : ratio(quic.poolerCpuMs, tcp.poolerCpuMs));
  row(out, 'failed queries', String(tcp.failed), String(quic.failed));
  if (tcp.firstError !== null) out.push(`    TCP+TLS first error: ${tcp.firstError}`);
  if (quic.firstError !== null) out.push(`    QUIC first error: ${quic.firstError}`);
  out.push(`    TCP+TLS: a pg.Pool of ${o.sessions}; QUIC: a QuicPool of ${o.sessions} over ${o.quicConnections} connections x ${o.streamsPerConnection} streams`);
  out.push('');
}
