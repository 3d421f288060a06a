// (c) The pooler's sockets and memory at N open local sessions: N pg clients straight to the daemon
// over TCP+TLS (SCRAM), against N pg clients through the agent (each its QUIC stream; certificate
// authentication). Each side gets a daemon of its own, started fresh, so neither inherits the
// other's heap or sockets; both on loopback without the WAN emulator (what the pooler holds per
// session does not depend on the path's delay, and N handshakes through the emulator would only
// make the run longer).
import type { SessionManagerOptions } from '@quicpool/client';
import { QuicAgent } from '@quicpool/client';
import type { RunningDaemon } from '../stack/daemon.js';
import { quicPortOf } from '../stack/daemon.js';
import { holdSessions } from './held-sessions.js';
import type { HeldSessions } from './held-sessions.js';

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

export interface PoolerSessionsResult {
  readonly tcpTls: HeldSessions;
  readonly agent: HeldSessions;
  /** The agent's QUIC connections x streams per connection (its limits for this run). */
  readonly agentQuic: { readonly maxConnections: number; readonly streamsPerConnection: number };
}

/** Streams per QUIC connection for the agent here (the daemon's quic.max_streams_per_connection must allow it). */
export const AGENT_STREAMS_PER_CONNECTION = 1_000;

export async function measurePoolerSessions(o: PoolerSessionsOptions, log: (line: string) => void): Promise<PoolerSessionsResult> {
  const tcpTls = await withPooler(o, async (pooler) => {
    log(`(c) ${o.sessions} sessions held open, TCP+TLS+SCRAM straight to a fresh daemon (pid ${pooler.pid}) ...`);
    return holdSessions({
      poolerPid: pooler.pid,
      count: o.sessions,
      concurrency: o.concurrency,
      deadlineMs: o.deadlineMs,
      client: { ...o.scram, host: pooler.host, port: pooler.tcpPort, ssl: { ca: pooler.caPem, servername: 'localhost', rejectUnauthorized: true } },
    });
  });
  // The agent's defaults (4 x 100 streams, 100 waiting) are for one machine's clients; here N at once.
  const agentQuic = { maxConnections: Math.max(1, Math.ceil(o.sessions / AGENT_STREAMS_PER_CONNECTION)) + 1, streamsPerConnection: AGENT_STREAMS_PER_CONNECTION };
  const agent = await withPooler(o, async (pooler) => {
    log(`(c) ${o.sessions} sessions held open through the agent (QUIC, certificate auth) to a fresh daemon (pid ${pooler.pid}) ...`);
    const sessions: SessionManagerOptions = {
      endpoints: [`${pooler.host}:${quicPortOf(pooler)}`], ca: pooler.caPem, serverName: 'localhost', ...o.agentCert, minConnections: 1, ...agentQuic,
    };
    const localAgent = new QuicAgent({ sessions, host: '127.0.0.1', port: 0, socketDir: null, maxWaiting: o.concurrency, queueTimeoutMs: o.deadlineMs });
    try {
      const a = await localAgent.listen();
      await localAgent.sessions.warm();
      return await holdSessions({
        poolerPid: pooler.pid,
        count: o.sessions,
        concurrency: o.concurrency,
        deadlineMs: o.deadlineMs,
        client: { ...o.certLogin, host: '127.0.0.1', port: a.tcp?.port ?? 0 },
      });
    } finally {
      await localAgent.close({ timeoutMs: 2_000 });
    }
  });
  return { tcpTls, agent, agentQuic };
}

async function withPooler<T>(o: PoolerSessionsOptions, run: (pooler: RunningDaemon) => Promise<T>): Promise<T> {
  const pooler = await o.startPooler();
  try {
    return await run(pooler);
  } finally {
    await pooler.stop();
  }
}
