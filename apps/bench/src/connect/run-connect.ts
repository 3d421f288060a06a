// `pnpm bench:connect` (docs/connect.md, "Measured"): what `quicpool connect` (the local agent, in this
// process) buys a client that is not Node. Postgres <- the daemon <- the WAN path <- the agent <- pgbench /
// pg.Client on loopback, against the same clients straight to the daemon over TCP+TLS with SCRAM:
//   (a) pgbench -S, with -C (a new connection per transaction) and without
//   (b) time to first row of a new session, by the paths of FIRST_ROW_PATHS ("fast start": the agent
//       answers the login itself, so StartupMessage and query leave in one flight)
//   (c) the pooler's fds, sockets and RSS with N sessions held open each way (held-sessions.ts)
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { LoginCache, QuicAgent } from '@quicpool/client';
import type { AgentOptions, SessionManagerOptions } from '@quicpool/client';
import { findPgbench, startPostgres, withPgClient } from '@quicpool/pg-fixture';
import { generateDevCertificates, QuicTicketStore } from '@quicpool/transport';
import { firstRowMs } from '../client/connect.js';
import { byKey, medianMs, readOnlyZeroRttFirstRow, roundTripMs } from '../client/first-row.js';
import { parseSummary, runPgbench } from '../lan/pgbench.js';
import type { PgbenchSummary } from '../lan/pgbench.js';
import { describeMachine, machineLine } from '../report/machine.js';
import { round2 as r2 } from '../report/round.js';
import { quicPortOf, startDaemon } from '../stack/daemon.js';
import type { DaemonOptions, RunningDaemon } from '../stack/daemon.js';
import { daemonBehind, openPathHere } from '../stack/wan-path.js';
import type { PathMode, VariantPath } from '../stack/wan-path.js';
import { openFileLimit } from '../telemetry/proc.js';
import { holdSessions } from './held-sessions.js';
import type { HeldSessions } from './held-sessions.js';

export interface ConnectBenchOptions {
  readonly oneWayMs: number;
  readonly trials: number;
  readonly clients: number;
  readonly seconds: number;
  /** (c): sessions held open on each side. */
  readonly sessions: number;
  readonly json: boolean;
  readonly path: PathMode | 'auto';
}

const log = (s: string): void => void process.stderr.write(`${s}\n`);
/** (b)'s paths and their rows, in the order of the table and of the JSON. */
const FIRST_ROW_PATHS = {
  tcpTlsScram: 'TCP+TLS+SCRAM, direct to the pooler',
  agentScram: 'agent, QUIC open, SCRAM relayed',
  agentCert: 'agent, QUIC open, certificate auth',
  agentZeroRtt: 'agent just restarted (0-RTT), cert auth',
  readOnlyZeroRtt: '@quicpool/client, resumed, read-only 0-RTT',
  agentFastStart: 'agent fast start, QUIC open, cert auth',
  agentFastStartZeroRtt: 'agent fast start, just restarted (0-RTT)',
} as const;
type FirstRowPath = keyof typeof FIRST_ROW_PATHS;
const byFirstRowPath = <V>(f: (p: FirstRowPath) => V): Record<FirstRowPath, V> => byKey(Object.keys(FIRST_ROW_PATHS) as FirstRowPath[], f);
/** (c): at most this many sessions connecting at once, and this long to open all of one side. */
const HOLD_CONCURRENCY = 100;
const HOLD_DEADLINE_MS = 180_000;
const mb = (bytes: number): number => bytes / 2 ** 20;
/** (c): streams per QUIC connection for the agent (the daemon's quic.max_streams_per_connection must allow it). */
const AGENT_STREAMS_PER_CONNECTION = 1_000;

/** An agent on loopback for `run`; `warm`: its QUIC connection opened before the first client comes. */
async function withAgent<T>(
  sessions: SessionManagerOptions,
  extra: Partial<AgentOptions>,
  warm: boolean,
  run: (port: number, agent: QuicAgent) => Promise<T>,
): Promise<T> {
  const agent = new QuicAgent({ sessions, host: '127.0.0.1', port: 0, socketDir: null, ...extra });
  try {
    const a = await agent.listen();
    if (warm) await agent.sessions.warm();
    return await run(a.tcp?.port ?? 0, agent);
  } finally {
    await agent.close({ timeoutMs: 1_000 });
  }
}

export async function runConnectBench(o: ConnectBenchOptions): Promise<void> {
  // (c): this process holds both ends of the agent's local connections; the daemons inherit the limit.
  const need = 2 * o.sessions + 512;
  const limit = openFileLimit();
  if (limit !== null && limit < need) {
    throw new Error(`the open-file limit is ${limit}; ${o.sessions} sessions through the agent need about ${need} here: run \`ulimit -n ${need}\` (or higher) first, or pass --sessions`);
  }
  const pgbench = findPgbench();
  log(`${machineLine(describeMachine())}; open-file limit ${limit ?? 'unknown'}`);
  const pgServer = await startPostgres({ settings: { max_connections: '200' } });
  const stateDir = mkdtempSync(join(tmpdir(), 'quicpool-bench-connect-'));
  // Fast start checks the agent's unix-socket clients by peer credentials: the database user is our OS user.
  const osUser = userInfo().username;
  let pooler: RunningDaemon | null = null;
  let readOnlyPooler: RunningDaemon | null = null;
  let path: VariantPath | null = null;
  try {
    const info = pgServer.info;
    if (osUser === info.user || osUser === info.trustUser) throw new Error(`run the bench as an OS user not named ${osUser}: the fixture's own roles have that name`);
    const scram = { user: info.user, password: info.password, database: info.database };
    const admin = { host: info.host, port: info.port, ...scram };
    await withPgClient(admin, (c) => c.query(`create role ${pg.escapeIdentifier(osUser)} login password ${pg.escapeLiteral(info.password)}`));
    const agentCert = await generateDevCertificates({ names: ['bench-agent'], caName: 'bench agents CA' });
    const clientCaFile = join(stateDir, 'agents-ca.pem');
    writeFileSync(clientCaFile, agentCert.caPem);
    const daemon = (dir: string, extra: Partial<DaemonOptions> = {}): DaemonOptions => ({
      listenHost: '127.0.0.1',
      upstream: { host: info.host, port: info.port },
      users: {
        [info.user]: { password: info.password },
        [info.trustUser]: { auth: 'cert', certCommonNames: ['bench-agent'] },
        [osUser]: { auth: 'cert', certCommonNames: ['bench-agent'], password: info.password },
      },
      poolSize: 20,
      stateDir: dir,
      settings: { tls: { client_ca_file: clientCaFile } },
      ...extra,
    });
    path = await openPathHere(o.path, { delayMs: o.oneWayMs }, log);
    // The two daemons the clients reach over the WAN: behind the path (in its server namespace on the packet path).
    const behindPath = daemonBehind(path, info);
    pooler = await startDaemon(daemon(stateDir, behindPath));
    // The read-only 0-RTT policy is the daemon's choice: a second daemon has it, the first keeps the default.
    const readOnlySettings = { tls: { client_ca_file: clientCaFile }, quic: { early_data: 'read-only' } };
    readOnlyPooler = await startDaemon(daemon(join(stateDir, 'read-only'), { ...behindPath, poolSize: 4, settings: readOnlySettings }));
    const wanTcp = await path.endpoint('tcp', pooler.tcpPort);
    const wanUdp = await path.endpoint('udp', quicPortOf(pooler));
    const wanReadOnly = await path.endpoint('udp', quicPortOf(readOnlyPooler));
    log(`WAN: ${path.description}`);
    const { caPem } = pooler;
    const readOnlyCaPem = readOnlyPooler.caPem;
    const quic = (extra: Partial<SessionManagerOptions> = {}): SessionManagerOptions => ({
      endpoints: [`${wanUdp.host}:${wanUdp.port}`], ca: caPem, serverName: 'localhost', minConnections: 1, maxConnections: 4, ...extra,
    });
    const cert = { cert: agentCert.certPem, key: agentCert.keyPem };
    const certLogin = { user: info.trustUser, database: info.database };
    const local = (login: pg.ClientConfig, port: number): pg.ClientConfig => ({ ...login, host: '127.0.0.1', port });
    // Fast start: a unix-socket client of the agent, checked by peer credentials; login answers remembered across agents.
    const fastAgent: Partial<AgentOptions> = { socketDir: stateDir, localChecks: { socket: 'peer' }, fastStart: 'auto', loginCache: new LoginCache() };
    const peerLogin = (port: number): pg.ClientConfig => ({ user: osUser, database: info.database, host: stateDir, port });
    const tls = { ...scram, host: wanTcp.host, port: wanTcp.port, ssl: { ca: caPem, servername: 'localhost', rejectUnauthorized: true } };

    const rttMs = await withPgClient(tls, (c) => roundTripMs(() => c.query('select 1')));
    log(`WAN ${o.oneWayMs} ms each way (${path.mode} path); measured RTT (select 1 on an open TCP+TLS session) ${rttMs.toFixed(2)} ms`);

    log(`(b) first row of a new session, ${o.trials} trials per path ...`);
    const samples = byFirstRowPath((): number[] => []);
    const trials = async (p: FirstRowPath, trial: () => Promise<number>): Promise<void> => {
      for (let i = 0; i < o.trials; i++) samples[p].push(await trial());
    };
    await trials('tcpTlsScram', () => firstRowMs(tls));
    await withAgent(quic(), {}, true, (port) => trials('agentScram', () => firstRowMs(local(scram, port))));
    const tickets = new QuicTicketStore();
    await withAgent(quic({ ...cert, tickets }), {}, true, (port) => trials('agentCert', () => firstRowMs(local(certLogin, port))));
    let early = 0;
    // An agent started again: nothing open, a ticket from the last run; the first session resumes.
    await trials('agentZeroRtt', () => withAgent(quic({ ...cert, tickets, minConnections: 0 }), {}, false, async (port, agent) => {
      const ms = await firstRowMs(local(certLogin, port));
      early += agent.stats().earlyStartups;
      return ms;
    }));
    // @quicpool/client itself (no agent) on a resumed connection, first query in the 0-RTT flight.
    const readOnlyTargets = { host: wanReadOnly.host, tlsPort: wanTcp.port, quicPort: wanReadOnly.port, caPem: readOnlyCaPem };
    const readOnlyRuns = { resumed: 0, earlyData: 0 };
    await trials('readOnlyZeroRtt', async () => {
      const r = await readOnlyZeroRttFirstRow(readOnlyTargets, certLogin, cert);
      readOnlyRuns.resumed += Number(r.resumed);
      readOnlyRuns.earlyData += Number(r.earlyData);
      return r.ms;
    });
    // Fast start on an open connection: the first session learns the pooler's login answer (today's path), the rest are answered by the agent.
    const fastRuns = { open: 0, restarted: 0, restartedEarly: 0, pgbench: 0 };
    await withAgent(quic(cert), fastAgent, true, async (port, agent) => {
      await firstRowMs(peerLogin(port));
      await trials('agentFastStart', () => firstRowMs(peerLogin(port)));
      fastRuns.open = agent.stats().fastStarts;
    });
    // ... and just started again: to the read-only daemon, resumed from a ticket, the StartupMessage
    // and `select 1` in the 0-RTT flight, answered before the handshake is confirmed.
    const readOnlyTickets = new QuicTicketStore();
    const readOnlyQuic = (extra: Partial<SessionManagerOptions> = {}): SessionManagerOptions =>
      quic({ endpoints: [`${wanReadOnly.host}:${wanReadOnly.port}`], ca: readOnlyCaPem, ...cert, tickets: readOnlyTickets, ...extra });
    await withAgent(readOnlyQuic(), fastAgent, true, (port) => firstRowMs(peerLogin(port)));
    await trials('agentFastStartZeroRtt', () => withAgent(readOnlyQuic({ minConnections: 0 }), fastAgent, false, async (port, agent) => {
      const ms = await firstRowMs(peerLogin(port));
      fastRuns.restarted += agent.stats().fastStarts;
      fastRuns.restartedEarly += agent.stats().earlyStartups;
      return ms;
    }));
    const ms = byFirstRowPath((p) => medianMs(samples[p]));
    const rtts = byFirstRowPath((p) => ms[p] / rttMs);

    let bench: Record<'connectPerTx' | 'plain', { tcpTls: PgbenchSummary; agent: PgbenchSummary }> | null = null;
    let fastBench: PgbenchSummary | null = null;
    if (pgbench === null) {
      log('(a) skipped: pgbench is not installed');
    } else {
      await runPgbench(pgbench, admin, ['-i', '-s', '1', '-q'], 120_000);
      await withPgClient(admin, async (c) => {
        for (const who of [info.trustUser, pg.escapeIdentifier(osUser)]) {
          await c.query(`grant select, update on pgbench_accounts, pgbench_branches, pgbench_tellers to ${who}; grant insert on pgbench_history to ${who}`);
        }
      });
      const tlsTarget = { ...admin, host: wanTcp.host, port: wanTcp.port };
      const args = (perTx: boolean): string[] => [...(perTx ? ['-C'] : []), '-S', '-c', String(o.clients), '-j', '2', '-T', String(o.seconds)];
      const timeoutMs = (o.seconds + 60) * 1000;
      bench = await withAgent(quic({ ...cert, maxConnections: 2 }), {}, true, async (port) => {
        const agentTarget = { host: '127.0.0.1', port, user: info.trustUser, password: '', database: info.database };
        const both = async (perTx: boolean): Promise<{ tcpTls: PgbenchSummary; agent: PgbenchSummary }> => {
          log(`(a) pgbench ${args(perTx).join(' ')}: TCP+TLS+SCRAM direct ...`);
          const tcpTls = parseSummary(await runPgbench(pgbench, tlsTarget, args(perTx), timeoutMs, 'require'));
          log(`(a) pgbench ${args(perTx).join(' ')}: through the agent (QUIC, certificate authentication) ...`);
          return { tcpTls, agent: parseSummary(await runPgbench(pgbench, agentTarget, args(perTx), timeoutMs)) };
        };
        return { connectPerTx: await both(true), plain: await both(false) };
      });
      fastBench = await withAgent(quic({ ...cert, maxConnections: 2 }), fastAgent, true, async (port, agent) => {
        const fastTarget = { host: stateDir, port, user: osUser, password: '', database: info.database };
        log(`(a) pgbench ${args(true).join(' ')}: through the agent with fast start (unix socket, peer check; QUIC, certificate authentication) ...`);
        const s = parseSummary(await runPgbench(pgbench, fastTarget, args(true), timeoutMs));
        fastRuns.pgbench = agent.stats().fastStarts;
        return s;
      });
    }

    // (c) sessions held open: each side on a fresh daemon of its own (neither inherits the other's
    // heap or sockets), on loopback without the WAN (what the pooler holds per session does not
    // depend on the path).
    let heldRuns = 0;
    const onFreshPooler = async (run: (pooler: RunningDaemon) => Promise<HeldSessions>): Promise<HeldSessions> => {
      const fresh = await startDaemon(daemon(join(stateDir, `held-${++heldRuns}`), {
        settings: {
          tls: { client_ca_file: clientCaFile },
          // N logins at once on a busy 2-core machine take a while (max_client_connections: the
          // bench's 20,000, see daemon.ts); the agent's N streams on a few connections.
          limits: { auth_timeout_ms: HOLD_DEADLINE_MS },
          pool: { query_wait_timeout_ms: HOLD_DEADLINE_MS },
          quic: { max_streams_per_connection: AGENT_STREAMS_PER_CONNECTION },
        },
      }));
      try {
        return await run(fresh);
      } finally {
        await fresh.stop();
      }
    };
    const hold = (pid: number, client: pg.ClientConfig): Promise<HeldSessions> =>
      holdSessions({ poolerPid: pid, count: o.sessions, concurrency: HOLD_CONCURRENCY, deadlineMs: HOLD_DEADLINE_MS, client });
    // The agent's defaults (4 x 100 streams, 100 waiting) are for one machine's clients; here N at once.
    const agentQuic = { maxConnections: Math.max(1, Math.ceil(o.sessions / AGENT_STREAMS_PER_CONNECTION)) + 1, streamsPerConnection: AGENT_STREAMS_PER_CONNECTION };
    const footprint = {
      tcpTls: await onFreshPooler((p) => {
        log(`(c) ${o.sessions} sessions held open, TCP+TLS+SCRAM straight to a fresh daemon (pid ${p.pid}) ...`);
        return hold(p.pid, { ...scram, host: p.host, port: p.tcpPort, ssl: { ca: p.caPem, servername: 'localhost', rejectUnauthorized: true } });
      }),
      agent: await onFreshPooler((p) => {
        log(`(c) ${o.sessions} sessions held open through the agent (QUIC, certificate auth) to a fresh daemon (pid ${p.pid}) ...`);
        const sessions = { endpoints: [`${p.host}:${quicPortOf(p)}`], ca: p.caPem, serverName: 'localhost', ...cert, minConnections: 1, ...agentQuic };
        const limits = { maxWaiting: HOLD_CONCURRENCY, queueTimeoutMs: HOLD_DEADLINE_MS };
        return withAgent(sessions, limits, true, (port) => hold(p.pid, local(certLogin, port)));
      }),
    };

    const wanText = `WAN ${o.oneWayMs} ms each way, ${path.mode === 'packet' ? 'the packet path' : 'the user-space relay'}`;
    const out = ['', `bench:connect — ${wanText}; measured RTT ${rttMs.toFixed(1)} ms`, '', `(b) first row of a new local session (median of ${o.trials})`];
    for (const [p, label] of Object.entries(FIRST_ROW_PATHS) as [FirstRowPath, string][]) {
      out.push(`    ${label.padEnd(44)}${rtts[p].toFixed(2).padStart(6)} RTT ${ms[p].toFixed(1).padStart(8)} ms`);
    }
    out.push(`    StartupMessages sent in 0-RTT early data after a restart: ${early} of ${o.trials}`);
    out.push(`    read-only 0-RTT: @quicpool/client (no agent), certificate auth, fastStart 'early-data', to a daemon with quic.early_data = "read-only";`);
    out.push(`      resumed ${readOnlyRuns.resumed} of ${o.trials}, StartupMessage and select 1 in early data ${readOnlyRuns.earlyData} of ${o.trials}`);
    out.push(`    fast start: local clients on the agent's unix socket (peer check), the agent's certificate to the pooler; fast-started ${fastRuns.open} of ${o.trials}`);
    out.push(`      just restarted: to the read-only daemon (quic.early_data = "read-only"); fast-started ${fastRuns.restarted} of ${o.trials}, StartupMessage in early data ${fastRuns.restartedEarly} of ${o.trials}`);
    if (path.mode === 'relay') out.push("    TCP: the relay accepts the connection locally, so TCP's own handshake round trip is not charged (a real path adds 1 RTT)");
    if (bench !== null) {
      // pgbench reports no tps when its logins outlast the run (-T shorter than 50 logins of ~7 RTT).
      const f = (r: PgbenchSummary): string => (Number.isFinite(r.tps) ? `${r.tps.toFixed(0)} tps ${(r.latencyMeanMs / rttMs).toFixed(2)} RTT` : 'none: -T too short');
      const ratio = (a: number, b: number): string => (Number.isFinite(a / b) ? `${(a / b).toFixed(2)}x` : '-');
      const row = (label: string, direct: string, agent: PgbenchSummary, base: PgbenchSummary): string =>
        `    ${label.padEnd(40)}${direct.padStart(20)}${f(agent).padStart(22)}${ratio(agent.tps, base.tps).padStart(11)}`;
      out.push('', `(a) pgbench -S, -c ${o.clients} -j 2 -T ${o.seconds}          TCP+TLS+SCRAM        agent (QUIC, cert)     ratio`);
      for (const key of ['connectPerTx', 'plain'] as const) {
        const b = bench[key];
        out.push(row(key === 'connectPerTx' ? '-C (new connection per transaction)' : 'plain', f(b.tcpTls), b.agent, b.tcpTls));
        if (b.tcpTls.failed > 0 || b.agent.failed > 0) out.push(`    failed transactions: TCP+TLS ${b.tcpTls.failed}, agent ${b.agent.failed}`);
      }
      if (fastBench !== null) {
        out.push(row('-C, agent with fast start (unix, peer)', '', fastBench, bench.connectPerTx.tcpTls));
        out.push(`      fast-started ${fastRuns.pgbench} of ${fastBench.transactions} transactions${fastBench.failed > 0 ? `; failed ${fastBench.failed}` : ''}`);
      }
    }
    const held = (label: string, f: (s: HeldSessions) => string): string => `    ${label.padEnd(72)}${f(footprint.tcpTls).padStart(17)}${f(footprint.agent).padStart(21)}`;
    out.push('', `(c) the pooler process with ${o.sessions} sessions held open (a fresh daemon each; loopback)     TCP+TLS+SCRAM   agent (QUIC, cert)`);
    out.push(held('open file descriptors (/proc/PID/fd)', (s) => `${s.held.fds}`));
    out.push(held('  of which sockets', (s) => `${s.held.sockets}`));
    out.push(held('RSS (/proc/PID/status VmRSS)', (s) => `${mb(s.held.rssBytes).toFixed(1)} MiB`));
    out.push(held('before the first session: fds / sockets / RSS', (s) => `${s.before.fds} / ${s.before.sockets} / ${mb(s.before.rssBytes).toFixed(0)} MiB`));
    out.push(held(`time to open the ${o.sessions} (connect + select 1, ${HOLD_CONCURRENCY} at once)`, (s) => `${(s.openMs / 1000).toFixed(1)} s`));
    out.push(`    clients: node-postgres; the agent in this process with ${agentQuic.maxConnections} QUIC connections x ${agentQuic.streamsPerConnection} streams allowed`);
    process.stdout.write(`${out.join('\n')}\n`);
    if (o.json) {
      const sides = <T>(f: (s: HeldSessions) => T): { tcpTls: T; agent: T } => ({ tcpTls: f(footprint.tcpTls), agent: f(footprint.agent) });
      process.stdout.write(`${JSON.stringify({
        bench: 'connect',
        wanPath: path.mode,
        configuredOneWayMs: o.oneWayMs,
        measuredRttMs: r2(rttMs),
        pgbenchConnectPerTx: bench === null ? null : {
          tcpTls: r2(bench.connectPerTx.tcpTls.tps), agent: r2(bench.connectPerTx.agent.tps), agentFastStart: fastBench === null ? null : r2(fastBench.tps),
        },
        pgbenchPlain: bench === null ? null : { tcpTls: r2(bench.plain.tcpTls.tps), agent: r2(bench.plain.agent.tps) },
        firstRowRtts: byFirstRowPath((p) => r2(rtts[p])),
        firstRowMs: byFirstRowPath((p) => r2(ms[p])),
        readOnlyZeroRttRuns: { auth: 'cert', trials: o.trials, ...readOnlyRuns },
        fastStartRuns: { trials: o.trials, ...fastRuns },
        heldSessions: o.sessions,
        poolerFds: sides((s) => s.held.fds),
        poolerSockets: sides((s) => s.held.sockets),
        poolerRssMb: sides((s) => r2(mb(s.held.rssBytes))),
        poolerBefore: sides((s) => ({ fds: s.before.fds, sockets: s.before.sockets, rssMb: r2(mb(s.before.rssBytes)) })),
      })}\n`);
    }
  } finally {
    await pooler?.stop();
    await readOnlyPooler?.stop();
    await path?.close();
    await pgServer.stop();
    rmSync(stateDir, { recursive: true, force: true });
  }
}
