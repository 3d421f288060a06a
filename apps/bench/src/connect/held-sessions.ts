// (c) What the pooler holds for many open sessions: `count` node-postgres clients (what psql and
// every other driver look like to a pooler) connected at once, each with one `select 1` answered,
// then the pooler process read from outside: open file descriptors, how many are sockets
// (/proc/PID/fd) and its RSS (/proc/PID/status). Bounded: at most `concurrency` connecting at once,
// every connect and query has a timeout, and the whole opening has a deadline; every client is
// ended before this returns, whatever happened.
// Two sides, each on a daemon of its own, started fresh, so neither inherits the other's heap or
// sockets: N pg clients straight to the daemon over TCP+TLS (SCRAM), against N pg clients through
// the agent (each its QUIC stream; certificate authentication). Both on loopback without the WAN
// (what the pooler holds per session does not depend on the path's delay).
import pg from 'pg';
import type { SessionManagerOptions } from '@quicpool/client';
import { QuicAgent } from '@quicpool/client';
import { openMany } from '../client/connect.js';
import type { RunningDaemon } from '../stack/daemon.js';
import { quicPortOf } from '../stack/daemon.js';
import { readProcFds, readProcSample } from '../telemetry/proc.js';

export type HeldSessions = Awaited<ReturnType<typeof holdSessions>>;

export interface HoldOptions {
  /** The pooler's pid (read through /proc). */
  readonly poolerPid: number;
  readonly count: number;
  readonly concurrency: number;
  /** Settings of one client (where it connects, who logs in). */
  readonly client: pg.ClientConfig;
  /** Deadline for opening all of them, ms. */
  readonly deadlineMs: number;
}

/** The pooler's fds, sockets and RSS at one moment; throws when /proc cannot be read (the pooler is gone, or not Linux). */
export function poolerFootprint(pid: number): { fds: number; sockets: number; rssBytes: number } {
  const fds = readProcFds(pid);
  const sample = readProcSample(pid);
  if (fds === null || sample === null) throw new Error(`cannot read /proc/${pid} (the pooler's fd table and status)`);
  return { fds: fds.fds, sockets: fds.sockets, rssBytes: sample.rssBytes };
}

/** The pooler before the first client connected and with every session open and idle; openMs: time to open them all (connect + select 1). */
export async function holdSessions(o: HoldOptions) {
  const before = poolerFootprint(o.poolerPid);
  const clients: pg.Client[] = [];
  const deadline = performance.now() + o.deadlineMs;
  const timeoutMs = Math.max(1, Math.round(o.deadlineMs));
  const t0 = performance.now();
  try {
    await openMany(o.count, o.concurrency, async () => {
      if (performance.now() > deadline) throw new Error(`${clients.length} of ${o.count} sessions opened within the deadline of ${o.deadlineMs} ms`);
      const client = new pg.Client({ ...o.client, connectionTimeoutMillis: timeoutMs, query_timeout: timeoutMs });
      client.on('error', () => undefined); // a session lost while held shows up as a failed query or a count short
      clients.push(client);
      await client.connect();
      await client.query('select 1');
    }).catch((e: unknown) => {
      throw new Error(`opening ${o.count} sessions failed after ${clients.length}: ${String(e)}`);
    });
    const openMs = performance.now() - t0;
    return { sessions: clients.length, before, held: poolerFootprint(o.poolerPid), openMs };
  } finally {
    await Promise.allSettled(clients.map((c) => c.end()));
  }
}

export interface PoolerSessionsOptions {
  readonly sessions: number;
  readonly concurrency: number;
  /** Deadline for opening the N sessions of one side, ms. */
  readonly deadlineMs: number;
  /** Starts a fresh daemon (raised limits, cert users); called once per side. */
  readonly startPooler: () => Promise<RunningDaemon>;
  /** Password login for the direct side. */
  readonly scram: { readonly user: string; readonly password: string; readonly database: string };
  /** Certificate login for the agent side, and the agent's certificate. */
  readonly certLogin: { readonly user: string; readonly database: string };
  readonly agentCert: { readonly cert: string; readonly key: string };
}

/** Streams per QUIC connection for the agent here (the daemon's quic.max_streams_per_connection must allow it). */
export const AGENT_STREAMS_PER_CONNECTION = 1_000;

export async function measurePoolerSessions(o: PoolerSessionsOptions, log: (line: string) => void): Promise<{
  readonly tcpTls: HeldSessions;
  readonly agent: HeldSessions;
  /** The agent's QUIC connections x streams per connection (its limits for this run). */
  readonly agentQuic: { readonly maxConnections: number; readonly streamsPerConnection: number };
}> {
  const withPooler = async (run: (pooler: RunningDaemon) => Promise<HeldSessions>): Promise<HeldSessions> => {
    const pooler = await o.startPooler();
    try {
      return await run(pooler);
    } finally {
      await pooler.stop();
    }
  };
  const hold = (pooler: RunningDaemon, client: pg.ClientConfig): Promise<HeldSessions> =>
    holdSessions({ poolerPid: pooler.pid, count: o.sessions, concurrency: o.concurrency, deadlineMs: o.deadlineMs, client });
  const tcpTls = await withPooler((pooler) => {
    log(`(c) ${o.sessions} sessions held open, TCP+TLS+SCRAM straight to a fresh daemon (pid ${pooler.pid}) ...`);
    return hold(pooler, { ...o.scram, host: pooler.host, port: pooler.tcpPort, ssl: { ca: pooler.caPem, servername: 'localhost', rejectUnauthorized: true } });
  });
  // The agent's defaults (4 x 100 streams, 100 waiting) are for one machine's clients; here N at once.
  const agentQuic = { maxConnections: Math.max(1, Math.ceil(o.sessions / AGENT_STREAMS_PER_CONNECTION)) + 1, streamsPerConnection: AGENT_STREAMS_PER_CONNECTION };
  const agent = await withPooler(async (pooler) => {
    log(`(c) ${o.sessions} sessions held open through the agent (QUIC, certificate auth) to a fresh daemon (pid ${pooler.pid}) ...`);
    const sessions: SessionManagerOptions = {
      endpoints: [`${pooler.host}:${quicPortOf(pooler)}`], ca: pooler.caPem, serverName: 'localhost', ...o.agentCert, minConnections: 1, ...agentQuic,
    };
    const localAgent = new QuicAgent({ sessions, host: '127.0.0.1', port: 0, socketDir: null, maxWaiting: o.concurrency, queueTimeoutMs: o.deadlineMs });
    try {
      const a = await localAgent.listen();
      await localAgent.sessions.warm();
      return await hold(pooler, { ...o.certLogin, host: '127.0.0.1', port: a.tcp?.port ?? 0 });
    } finally {
      await localAgent.close({ timeoutMs: 2_000 });
    }
  });
  return { tcpTls, agent, agentQuic };
}
