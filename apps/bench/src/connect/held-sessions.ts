// (c) What the pooler holds for many open sessions: `count` node-postgres clients (what psql and
// every other driver look like to a pooler) connected at once, each with one `select 1` answered,
// then the pooler process read from outside: open file descriptors, how many are sockets
// (/proc/PID/fd) and its RSS (/proc/PID/status). Bounded: at most `concurrency` connecting at once,
// every connect and query has a timeout, and the whole opening has a deadline; every client is
// ended before this returns, whatever happened.
import pg from 'pg';
import { readProcFds, readProcSample } from '../telemetry/proc.js';

/** The pooler process at one moment. */
export interface PoolerFootprint {
  readonly fds: number;
  readonly sockets: number;
  readonly rssBytes: number;
}

export interface HeldSessions {
  readonly sessions: number;
  /** Before the first client connected. */
  readonly before: PoolerFootprint;
  /** With every session open and idle. */
  readonly held: PoolerFootprint;
  /** Time to open them all (connect + select 1), ms. */
  readonly openMs: number;
}

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

/** The pooler's fds, sockets and RSS; throws when /proc cannot be read (the pooler is gone, or not Linux). */
export function poolerFootprint(pid: number): PoolerFootprint {
  const fds = readProcFds(pid);
  const sample = readProcSample(pid);
  if (fds === null || sample === null) throw new Error(`cannot read /proc/${pid} (the pooler's fd table and status)`);
  return { fds: fds.fds, sockets: fds.sockets, rssBytes: sample.rssBytes };
}

export async function holdSessions(o: HoldOptions): Promise<HeldSessions> {
  const before = poolerFootprint(o.poolerPid);
  const clients: pg.Client[] = [];
  const deadline = performance.now() + o.deadlineMs;
  const timeoutMs = Math.max(1, Math.round(o.deadlineMs));
  let started = 0;
  let failure: unknown = null;
  const lane = async (): Promise<void> => {
    while (started < o.count && failure === null) {
      if (performance.now() > deadline) throw new Error(`${started} of ${o.count} sessions opened within the deadline of ${o.deadlineMs} ms`);
      started++;
      const client = new pg.Client({ ...o.client, connectionTimeoutMillis: timeoutMs, query_timeout: timeoutMs });
      client.on('error', () => undefined); // a session lost while held shows up as a failed query or a count short
      clients.push(client);
      await client.connect();
      await client.query('select 1');
    }
  };
  const t0 = performance.now();
  try {
    const lanes = await Promise.allSettled(Array.from({ length: Math.min(o.concurrency, o.count) }, async () => {
      try {
        await lane();
      } catch (e) {
        failure ??= e;
        throw e;
      }
    }));
    const rejected = lanes.find((l): l is PromiseRejectedResult => l.status === 'rejected');
    if (rejected !== undefined) throw new Error(`opening ${o.count} sessions failed after ${clients.length}: ${String(rejected.reason)}`);
    const openMs = performance.now() - t0;
    return { sessions: clients.length, before, held: poolerFootprint(o.poolerPid), openMs };
  } finally {
    await Promise.allSettled(clients.map((c) => c.end()));
  }
}
