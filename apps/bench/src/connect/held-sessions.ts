// (c) What the pooler holds for many open sessions: `count` node-postgres clients (what any driver looks
// like to a pooler) connected at once, each with one `select 1` answered, then the pooler's fds, sockets
// and RSS read from /proc. Bounded: `concurrency` connecting at once, timeouts on every connect and query,
// a deadline on the whole opening; every client is ended before this returns.
import pg from 'pg';
import { openMany } from '../client/connect.js';
import { readProcFds, readProcSample } from '../telemetry/proc.js';

export type HeldSessions = Awaited<ReturnType<typeof holdSessions>>;

export interface HoldOptions {
  readonly poolerPid: number;
  readonly count: number;
  readonly concurrency: number;
  /** Settings of one client (where it connects, who logs in). */
  readonly client: pg.ClientConfig;
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
