// `pnpm bench:connect`: what `quicpool connect` (the local agent) buys a client that is not Node.
// Postgres (pg-fixture) <- the quicpool daemon (own process) <- the WAN path (the packet path as
// root: the daemons in the server's namespace, reaching Postgres by its unix socket; otherwise the
// user-space relay) <- the agent (QuicAgent, in this process) <- pgbench / pg.Client on loopback.
//   (a) pgbench -C -S (a new connection per transaction) and plain -S at -c 50: straight to the
//       daemon over TCP+TLS with SCRAM vs through the agent over QUIC with certificate authentication
//   (b) time to first row of a new session, median of N: TCP+TLS+SCRAM direct; agent on an open
//       QUIC connection with SCRAM relayed; agent with certificate authentication; agent just
//       started again (0-RTT resumption from its ticket store); and, without the agent,
//       @quicpool/client on a resumed connection to a second daemon with quic.early_data =
//       "read-only", fastStart 'early-data', certificate authentication (bench:client's code path);
//       agent with fast start (peer check on its unix socket, certificate to the pooler: the agent
//       answers the login itself, the StartupMessage and the query leave in one flight), on an open
//       connection and just started again (0-RTT to the read-only daemon, login answers remembered)
//   (c) the pooler's file descriptors, sockets and RSS with N sessions held open through the agent
//       vs N straight over TCP+TLS (a fresh daemon each, loopback: see pooler-sessions.ts)
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { LoginCache, QuicAgent } from '@quicpool/client';
import type { AgentOptions, SessionManagerOptions } from '@quicpool/client';
import { startPostgres } from '@quicpool/pg-fixture';
import { generateDevCertificates, QuicTicketStore } from '@quicpool/transport';
import { medianMs, readOnlyZeroRttFirstRow } from '../client/first-row.js';
import { round2 as r2 } from '../report/round.js';
import { findPgbench, parseSummary, runPgbench } from '../lan/pgbench.js';
import type { PgTarget } from '../stack/postgres.js';

/** pgbench's summary; with -C it prints "tps = N (including reconnection times)" instead. */
function summary(out: string): ReturnType<typeof parseSummary> {
  const s = parseSummary(out);
  return Number.isNaN(s.tps) ? { ...s, tps: Number(/tps = ([\d.]+)/.exec(out)?.[1] ?? NaN) } : s;
}
import { describeMachine, machineLine } from '../report/machine.js';
import { quicPortOf, startDaemon } from '../stack/daemon.js';
import type { DaemonOptions, RunningDaemon } from '../stack/daemon.js';
import { openFileLimit } from '../telemetry/proc.js';
import { AGENT_STREAMS_PER_CONNECTION, measurePoolerSessions } from './pooler-sessions.js';
import type { PoolerSessionsResult } from './pooler-sessions.js';
import type { HeldSessions } from './held-sessions.js';
import { choosePathMode, openPath, upstreamBehind } from '../stack/wan-path.js';
import type { PathMode, VariantPath } from '../stack/wan-path.js';

export interface ConnectBenchOptions {
  readonly oneWayMs: number;
  readonly trials: number;
  readonly clients: number;
  readonly seconds: number;
  /** (c): sessions held open on each side. */
  readonly sessions: number;
  readonly json: boolean;
  /** The WAN: the packet path where it can be built (`auto`), or as asked. */
  readonly path: PathMode | 'auto';
  /** The quicpool-bench program, run as the WAN relay. */
  readonly script: string;
}

const log = (s: string): void => void process.stderr.write(`${s}\n`);
type FirstRowPath = 'tcpTlsScram' | 'agentScram' | 'agentCert' | 'agentZeroRtt' | 'readOnlyZeroRtt' | 'agentFastStart' | 'agentFastStartZeroRtt';
/** (c): at most this many sessions connecting at once, and this long to open all of one side. */
const HOLD_CONCURRENCY = 100;
const HOLD_DEADLINE_MS = 180_000;
const mb = (bytes: number): number => bytes / 2 ** 20;

async function firstRowMs(config: pg.ClientConfig): Promise<number> {
  const t0 = performance.now();
  const c = new pg.Client(config);
  await c.connect();
  await c.query('select 1');
  const ms = performance.now() - t0;
  await c.end();
  return ms;
}

async function withAgent<T>(
  sessions: SessionManagerOptions,
  run: (port: number, agent: QuicAgent) => Promise<T>,
  extra: Partial<AgentOptions> = {},
): Promise<T> {
  const agent = new QuicAgent({ sessions, host: '127.0.0.1', port: 0, socketDir: null, ...extra });
  try {
    const a = await agent.listen();
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
  // Fast start: local clients on the agent's unix socket checked by peer credentials, so the
  // database user is this process's OS user (a role of that name, logged in by the agent's certificate).
  const osUser = userInfo().username;
  let pooler: RunningDaemon | null = null;
  let readOnlyPooler: RunningDaemon | null = null;
  let path: VariantPath | null = null;
  try {
    const info = pgServer.info;
    if (osUser === info.user || osUser === info.trustUser) throw new Error(`run the bench as an OS user not named ${osUser}: the fixture's own roles have that name`);
    const admin = new pg.Client({ host: info.host, port: info.port, user: info.user, password: info.password, database: info.database });
    await admin.connect();
    await admin.query(`create role ${pg.escapeIdentifier(osUser)} login password ${pg.escapeLiteral(info.password)}`);
    await admin.end();
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
    const { mode } = choosePathMode(o.path, log);
    path = await openPath(mode, { delayMs: o.oneWayMs, lossRate: 0, seed: 1, congestionControl: 'cubic' }, o.script, 'here');
    // The two daemons the clients reach over the WAN: behind the path (in its server namespace on the packet path).
    const behindPath = { namespace: path.serverNs, listenHost: path.serverHost, upstream: upstreamBehind(path, info) };
    pooler = await startDaemon(daemon(stateDir, behindPath));
    // The read-only 0-RTT policy is the daemon's choice: a second daemon has it, the first keeps the default.
    readOnlyPooler = await startDaemon(daemon(join(stateDir, 'read-only'), {
      ...behindPath,
      poolSize: 4,
      settings: { tls: { client_ca_file: clientCaFile }, quic: { early_data: 'read-only' } },
    }));
    const wanTcp = await path.endpoint('tcp', pooler.tcpPort);
    const wanUdp = await path.endpoint('udp', quicPortOf(pooler));
    const wanReadOnly = await path.endpoint('udp', quicPortOf(readOnlyPooler));
    const facts = await path.facts();
    log(`WAN: ${facts.description}`);
    const caPem = pooler.caPem;
    const quic = (extra: Partial<SessionManagerOptions> = {}): SessionManagerOptions => ({
      endpoints: [`${wanUdp.host}:${wanUdp.port}`], ca: caPem, serverName: 'localhost', minConnections: 1, maxConnections: 4, ...extra,
    });
    const cert = { cert: agentCert.certPem, key: agentCert.keyPem };
    const scram = { user: info.user, password: info.password, database: info.database };
    const certLogin = { user: info.trustUser, database: info.database };
    // Fast start: a unix-socket client of the agent, checked by peer credentials; login answers remembered across agents.
    const logins = new LoginCache();
    const fastAgent: Partial<AgentOptions> = { socketDir: stateDir, localChecks: { socket: 'peer' }, fastStart: 'auto', loginCache: logins };
    const peerLogin = (port: number): pg.ClientConfig => ({ user: osUser, database: info.database, host: stateDir, port });
    const tls = { ...scram, host: wanTcp.host, port: wanTcp.port, ssl: { ca: caPem, servername: 'localhost', rejectUnauthorized: true } };

    // One round trip: `select 1` on an open session, per path.
    const open = new pg.Client(tls);
    await open.connect();
    const rttSamples: number[] = [];
    for (let i = 0; i < 15; i++) {
      const t0 = performance.now();
      await open.query('select 1');
      rttSamples.push(performance.now() - t0);
    }
    await open.end();
    const rttMs = medianMs(rttSamples);
    log(`WAN ${o.oneWayMs} ms each way (${path.mode} path); measured RTT (select 1 on an open TCP+TLS session) ${rttMs.toFixed(2)} ms`);

    // (b) first row of a new session.
    log(`(b) first row of a new session, ${o.trials} trials per path ...`);
    const samples: Record<FirstRowPath, number[]> = { tcpTlsScram: [], agentScram: [], agentCert: [], agentZeroRtt: [], readOnlyZeroRtt: [], agentFastStart: [], agentFastStartZeroRtt: [] };
    for (let i = 0; i < o.trials; i++) samples.tcpTlsScram.push(await firstRowMs(tls));
    await withAgent(quic(), async (port, agent) => {
      await agent.sessions.warm();
      for (let i = 0; i < o.trials; i++) samples.agentScram.push(await firstRowMs({ ...scram, host: '127.0.0.1', port }));
    });
    const tickets = new QuicTicketStore();
    await withAgent(quic({ ...cert, tickets }), async (port, agent) => {
      await agent.sessions.warm();
      for (let i = 0; i < o.trials; i++) samples.agentCert.push(await firstRowMs({ ...certLogin, host: '127.0.0.1', port }));
    });
    let early = 0;
    for (let i = 0; i < o.trials; i++) {
      // An agent started again: nothing open, a ticket from the last run; the first session resumes.
      await withAgent(quic({ ...cert, tickets, minConnections: 0 }), async (port, agent) => {
        samples.agentZeroRtt.push(await firstRowMs({ ...certLogin, host: '127.0.0.1', port }));
        early += agent.stats().earlyStartups;
      });
    }
    // @quicpool/client itself (no agent) on a resumed connection, first query in the 0-RTT flight.
    const readOnlyTargets = { host: wanReadOnly.host, tlsPort: wanTcp.port, quicPort: wanReadOnly.port, caPem: readOnlyPooler.caPem };
    const readOnlyRuns = { resumed: 0, earlyData: 0 };
    for (let i = 0; i < o.trials; i++) {
      const r = await readOnlyZeroRttFirstRow(readOnlyTargets, certLogin, cert);
      samples.readOnlyZeroRtt.push(r.ms);
      if (r.resumed) readOnlyRuns.resumed++;
      if (r.earlyData) readOnlyRuns.earlyData++;
    }
    // Fast start on an open connection: the first session learns the pooler's login answer (today's path), the rest are answered by the agent.
    const fastRuns = { open: 0, restarted: 0, restartedEarly: 0, pgbench: 0 };
    await withAgent(quic(cert), async (port, agent) => {
      await agent.sessions.warm();
      await firstRowMs(peerLogin(port));
      for (let i = 0; i < o.trials; i++) samples.agentFastStart.push(await firstRowMs(peerLogin(port)));
      fastRuns.open = agent.stats().fastStarts;
    }, fastAgent);
    // ... and just started again: to the read-only daemon, resumed from a ticket, the StartupMessage
    // and `select 1` in the 0-RTT flight, answered before the handshake is confirmed.
    const readOnlyTickets = new QuicTicketStore();
    const readOnlyQuic = (extra: Partial<SessionManagerOptions> = {}): SessionManagerOptions =>
      quic({ endpoints: [`${wanReadOnly.host}:${wanReadOnly.port}`], ca: readOnlyPooler!.caPem, ...cert, tickets: readOnlyTickets, ...extra });
    await withAgent(readOnlyQuic(), async (port, agent) => {
      await agent.sessions.warm();
      await firstRowMs(peerLogin(port));
    }, fastAgent);
    for (let i = 0; i < o.trials; i++) {
      await withAgent(readOnlyQuic({ minConnections: 0 }), async (port, agent) => {
        samples.agentFastStartZeroRtt.push(await firstRowMs(peerLogin(port)));
        fastRuns.restarted += agent.stats().fastStarts;
        fastRuns.restartedEarly += agent.stats().earlyStartups;
      }, fastAgent);
    }
    const rtts = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, medianMs(v) / rttMs])) as Record<FirstRowPath, number>;
    const ms = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, medianMs(v)])) as Record<FirstRowPath, number>;

    // (a) pgbench.
    let bench: Record<'connectPerTx' | 'plain', Record<'tcpTls' | 'agent', ReturnType<typeof parseSummary>>> | null = null;
    // Assigned inside withAgent's callback: declared so that the compiler does not narrow it to null.
    let fastBench = null as ReturnType<typeof parseSummary> | null;
    if (pgbench === null) {
      log('(a) skipped: pgbench is not installed');
    } else {
      const direct: PgTarget = { host: info.host, port: info.port, user: info.user, password: info.password, database: info.database };
      await runPgbench(pgbench, direct, ['-i', '-s', '1', '-q'], 120_000);
      const c = new pg.Client({ host: info.host, port: info.port, ...scram });
      await c.connect();
      for (const who of [info.trustUser, pg.escapeIdentifier(osUser)]) {
        await c.query(`grant select, update on pgbench_accounts, pgbench_branches, pgbench_tellers to ${who}; grant insert on pgbench_history to ${who}`);
      }
      await c.end();
      const tlsTarget: PgTarget = { ...direct, host: wanTcp.host, port: wanTcp.port };
      const args = (perTx: boolean): string[] => [...(perTx ? ['-C'] : []), '-S', '-c', String(o.clients), '-j', '2', '-T', String(o.seconds)];
      bench = { connectPerTx: {} as never, plain: {} as never };
      await withAgent(quic({ ...cert, maxConnections: 2 }), async (port, agent) => {
        await agent.sessions.warm();
        const agentTarget: PgTarget = { host: '127.0.0.1', port, user: info.trustUser, password: '', database: info.database };
        for (const perTx of [true, false]) {
          const key = perTx ? 'connectPerTx' : 'plain';
          log(`(a) pgbench ${args(perTx).join(' ')}: TCP+TLS+SCRAM direct ...`);
          const t = summary(await runPgbench(pgbench, tlsTarget, args(perTx), (o.seconds + 60) * 1000, 'require'));
          log(`(a) pgbench ${args(perTx).join(' ')}: through the agent (QUIC, certificate authentication) ...`);
          const a = summary(await runPgbench(pgbench, agentTarget, args(perTx), (o.seconds + 60) * 1000));
          bench![key] = { tcpTls: t, agent: a };
        }
      });
      await withAgent(quic({ ...cert, maxConnections: 2 }), async (port, agent) => {
        await agent.sessions.warm();
        const fastTarget: PgTarget = { host: stateDir, port, user: osUser, password: '', database: info.database };
        log(`(a) pgbench ${args(true).join(' ')}: through the agent with fast start (unix socket, peer check; QUIC, certificate authentication) ...`);
        fastBench = summary(await runPgbench(pgbench, fastTarget, args(true), (o.seconds + 60) * 1000));
        fastRuns.pgbench = agent.stats().fastStarts;
      }, fastAgent);
    }

    // (c) sessions held open.
    let heldRuns = 0;
    const footprint: PoolerSessionsResult = await measurePoolerSessions({
      sessions: o.sessions,
      concurrency: HOLD_CONCURRENCY,
      deadlineMs: HOLD_DEADLINE_MS,
      startPooler: () => startDaemon(daemon(join(stateDir, `held-${++heldRuns}`), {
        settings: {
          tls: { client_ca_file: clientCaFile },
          // N logins at once on a busy 2-core machine take a while (max_client_connections: the
          // bench's 20,000, see daemon.ts); the agent's N streams on a few connections.
          limits: { auth_timeout_ms: HOLD_DEADLINE_MS },
          pool: { query_wait_timeout_ms: HOLD_DEADLINE_MS },
          quic: { max_streams_per_connection: AGENT_STREAMS_PER_CONNECTION },
        },
      })),
      scram,
      certLogin,
      agentCert: cert,
    }, log);

    const out: string[] = ['', `bench:connect — WAN ${o.oneWayMs} ms each way, ${path.mode === 'packet' ? 'the packet path' : 'the user-space relay'}; measured RTT ${rttMs.toFixed(1)} ms`, ''];
    out.push(`(b) first row of a new local session (median of ${o.trials})`);
    const label: Record<FirstRowPath, string> = {
      tcpTlsScram: 'TCP+TLS+SCRAM, direct to the pooler',
      agentScram: 'agent, QUIC open, SCRAM relayed',
      agentCert: 'agent, QUIC open, certificate auth',
      agentZeroRtt: 'agent just restarted (0-RTT), cert auth',
      readOnlyZeroRtt: '@quicpool/client, resumed, read-only 0-RTT',
      agentFastStart: 'agent fast start, QUIC open, cert auth',
      agentFastStartZeroRtt: 'agent fast start, just restarted (0-RTT)',
    };
    for (const k of Object.keys(label) as FirstRowPath[]) out.push(`    ${label[k].padEnd(44)}${rtts[k].toFixed(2).padStart(6)} RTT ${ms[k].toFixed(1).padStart(8)} ms`);
    out.push(`    StartupMessages sent in 0-RTT early data after a restart: ${early} of ${o.trials}`);
    out.push(`    read-only 0-RTT: @quicpool/client (no agent), certificate auth, fastStart 'early-data', to a daemon with quic.early_data = "read-only";`);
    out.push(`      resumed ${readOnlyRuns.resumed} of ${o.trials}, StartupMessage and select 1 in early data ${readOnlyRuns.earlyData} of ${o.trials}`);
    out.push(`    fast start: local clients on the agent's unix socket (peer check), the agent's certificate to the pooler; fast-started ${fastRuns.open} of ${o.trials}`);
    out.push(`      just restarted: to the read-only daemon (quic.early_data = "read-only"); fast-started ${fastRuns.restarted} of ${o.trials}, StartupMessage in early data ${fastRuns.restartedEarly} of ${o.trials}`);
    if (path.mode === 'relay') out.push("    TCP: the relay accepts the connection locally, so TCP's own handshake round trip is not charged (a real path adds 1 RTT)");
    if (bench !== null) {
      out.push('', `(a) pgbench -S, -c ${o.clients} -j 2 -T ${o.seconds}          TCP+TLS+SCRAM        agent (QUIC, cert)     ratio`);
      for (const key of ['connectPerTx', 'plain'] as const) {
        const b = bench[key];
        const f = (r: ReturnType<typeof parseSummary>): string => `${r.tps.toFixed(0)} tps ${(r.latencyMeanMs / rttMs).toFixed(2)} RTT`;
        out.push(`    ${(key === 'connectPerTx' ? '-C (new connection per transaction)' : 'plain').padEnd(40)}${f(b.tcpTls).padStart(20)}${f(b.agent).padStart(22)}${(b.agent.tps / b.tcpTls.tps).toFixed(2).padStart(10)}x`);
        if (b.tcpTls.failed > 0 || b.agent.failed > 0) out.push(`    failed transactions: TCP+TLS ${b.tcpTls.failed}, agent ${b.agent.failed}`);
      }
      if (fastBench !== null) {
        const f = fastBench;
        const t = bench.connectPerTx.tcpTls;
        out.push(`    ${'-C, agent with fast start (unix, peer)'.padEnd(40)}${''.padStart(20)}${`${f.tps.toFixed(0)} tps ${(f.latencyMeanMs / rttMs).toFixed(2)} RTT`.padStart(22)}${(f.tps / t.tps).toFixed(2).padStart(10)}x`);
        out.push(`      fast-started ${fastRuns.pgbench} of ${f.transactions} transactions${f.failed > 0 ? `; failed ${f.failed}` : ''}`);
      }
    }
    out.push('', `(c) the pooler process with ${o.sessions} sessions held open (a fresh daemon each; loopback)     TCP+TLS+SCRAM   agent (QUIC, cert)`);
    const cells = (f: (s: HeldSessions) => string): string => `${f(footprint.tcpTls).padStart(17)}${f(footprint.agent).padStart(21)}`;
    out.push(`    ${'open file descriptors (/proc/PID/fd)'.padEnd(72)}${cells((s) => `${s.held.fds}`)}`);
    out.push(`    ${'  of which sockets'.padEnd(72)}${cells((s) => `${s.held.sockets}`)}`);
    out.push(`    ${'RSS (/proc/PID/status VmRSS)'.padEnd(72)}${cells((s) => `${mb(s.held.rssBytes).toFixed(1)} MiB`)}`);
    out.push(`    ${'before the first session: fds / sockets / RSS'.padEnd(72)}${cells((s) => `${s.before.fds} / ${s.before.sockets} / ${mb(s.before.rssBytes).toFixed(0)} MiB`)}`);
    out.push(`    ${`time to open the ${o.sessions} (connect + select 1, ${HOLD_CONCURRENCY} at once)`.padEnd(72)}${cells((s) => `${(s.openMs / 1000).toFixed(1)} s`)}`);
    out.push(`    clients: node-postgres; the agent in this process with ${footprint.agentQuic.maxConnections} QUIC connections x ${footprint.agentQuic.streamsPerConnection} streams allowed`);
    process.stdout.write(`${out.join('\n')}\n`);
    if (o.json) {
      process.stdout.write(`${JSON.stringify({
        bench: 'connect',
        wanPath: path.mode,
        configuredOneWayMs: o.oneWayMs,
        measuredRttMs: r2(rttMs),
        pgbenchConnectPerTx: bench === null ? null : {
          tcpTls: r2(bench.connectPerTx.tcpTls.tps), agent: r2(bench.connectPerTx.agent.tps), agentFastStart: fastBench === null ? null : r2(fastBench.tps),
        },
        pgbenchPlain: bench === null ? null : { tcpTls: r2(bench.plain.tcpTls.tps), agent: r2(bench.plain.agent.tps) },
        firstRowRtts: Object.fromEntries(Object.entries(rtts).map(([k, v]) => [k, r2(v)])),
        firstRowMs: Object.fromEntries(Object.entries(ms).map(([k, v]) => [k, r2(v)])),
        readOnlyZeroRttRuns: { auth: 'cert', trials: o.trials, ...readOnlyRuns },
        fastStartRuns: { trials: o.trials, ...fastRuns },
        heldSessions: o.sessions,
        poolerFds: { tcpTls: footprint.tcpTls.held.fds, agent: footprint.agent.held.fds },
        poolerSockets: { tcpTls: footprint.tcpTls.held.sockets, agent: footprint.agent.held.sockets },
        poolerRssMb: { tcpTls: r2(mb(footprint.tcpTls.held.rssBytes)), agent: r2(mb(footprint.agent.held.rssBytes)) },
        poolerBefore: {
          tcpTls: { fds: footprint.tcpTls.before.fds, sockets: footprint.tcpTls.before.sockets, rssMb: r2(mb(footprint.tcpTls.before.rssBytes)) },
          agent: { fds: footprint.agent.before.fds, sockets: footprint.agent.before.sockets, rssMb: r2(mb(footprint.agent.before.rssBytes)) },
        },
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
