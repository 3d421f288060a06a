// (b) The cost of one idle session: a client process (its own, started with --expose-gc) opens
// `warmup` connected pg.Clients, samples, opens the rest up to `sessions`, samples again; the
// difference divided by the added sessions is the marginal cost of one idle session: RSS, kernel
// socket buffer memory (/proc/net/sockstat `mem`, TCP or UDP), sockets and file descriptors.
// Measured straight against the pooler (no WAN emulator: an idle session's cost does not depend
// on the path's delay, and the emulator's own sockets would count in the system-wide sockstat).
import { startWorkerProcess } from '../process/worker-process.js';
import pg from 'pg';
import { QuicClient, SessionManager } from '@quicpool/client';
import type { BenchTargets, Login } from './connect.js';
import { quicManagerOptions, tlsClientConfig } from './connect.js';
import { pageBytes, sampleMemory } from './proc-memory.js';
import type { MemorySample } from './proc-memory.js';
import { IDLE_FLAG } from '../commands/worker-flags.js';

export type IdleTransport = 'tcp' | 'quic';

export interface IdleWorkerConfig {
  readonly transport: IdleTransport;
  readonly sessions: number;
  readonly warmup: number;
  readonly targets: BenchTargets;
  readonly login: Login;
  readonly quicConnections: number;
  readonly streamsPerConnection: number;
}

export interface IdleResult {
  readonly transport: IdleTransport;
  /** Sessions added between the two samples. */
  readonly sessions: number;
  readonly rssBytesPerSession: number;
  /** Kernel socket buffer memory per session (TCP `mem` for tcp, UDP `mem` for quic; all ends). */
  readonly kernelBytesPerSession: number;
  /** rss + kernel. */
  readonly bytesPerSession: number;
  readonly heapBytesPerSession: number;
  /** Buffers and other memory V8 knows of outside its heap (process.memoryUsage().external). */
  readonly externalBytesPerSession: number;
  readonly fdsPerSession: number;
  /** Sockets in use system-wide (TCP or UDP `inuse`), per session. */
  readonly socketsPerSession: number;
  /** Totals at the second sample. */
  readonly fds: number;
  readonly rssBytes: number;
}

function settle(): Promise<void> {
  return new Promise((r) => setTimeout(r, 500));
}

function collect(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('run the idle worker with --expose-gc');
  gc();
  gc();
}

/** Opens `count` sessions, at most `concurrency` connecting at once. */
async function openMany<T>(count: number, concurrency: number, open: () => Promise<T>, into: T[]): Promise<void> {
  let started = 0;
  const lane = async (): Promise<void> => {
    while (started < count) {
      started++;
      into.push(await open());
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, lane));
}

/** The worker side: measures and prints "RESULT {json}". */
export async function runIdleWorker(c: IdleWorkerConfig): Promise<void> {
  const clients: pg.Client[] = [];
  const manager =
    c.transport === 'quic'
      ? new SessionManager(quicManagerOptions(c.targets, {
          maxConnections: c.quicConnections, streamsPerConnection: c.streamsPerConnection, idleTimeoutMs: 0,
        }))
      : null;
  const open = async (): Promise<pg.Client> => {
    const client = manager === null ? new pg.Client(tlsClientConfig(c.targets, c.login)) : new QuicClient({ ...c.login, sessions: manager });
    client.on('error', () => undefined);
    await client.connect();
    return client;
  };
  try {
    await openMany(c.warmup, 50, open, clients);
    await settle();
    collect();
    const before = sampleMemory();
    await openMany(c.sessions - c.warmup, 100, open, clients);
    // Every session is connected and idle; the check makes sure none was lost on the way.
    await Promise.all(clients.map((client) => client.query('select 1')));
    await settle();
    collect();
    const after = sampleMemory();
    process.stdout.write(`RESULT ${JSON.stringify(perSession(c.transport, before, after, c.sessions - c.warmup))}\n`);
  } finally {
    await Promise.allSettled(clients.map((client) => client.end()));
    await manager?.close({ timeoutMs: 2_000 });
  }
}

function perSession(transport: IdleTransport, a: MemorySample, b: MemorySample, n: number): IdleResult {
  const proto = transport === 'tcp' ? 'tcp' : 'udp';
  const rss = (b.rssBytes - a.rssBytes) / n;
  const kernel = ((b.sockstat[proto].memPages - a.sockstat[proto].memPages) * pageBytes()) / n;
  return {
    transport,
    sessions: n,
    rssBytesPerSession: Math.round(rss),
    kernelBytesPerSession: Math.round(kernel),
    bytesPerSession: Math.round(rss + kernel),
    heapBytesPerSession: Math.round((b.heapUsedBytes - a.heapUsedBytes) / n),
    externalBytesPerSession: Math.round((b.externalBytes - a.externalBytes) / n),
    fdsPerSession: (b.fds - a.fds) / n,
    socketsPerSession: (b.sockstat[proto].inuse - a.sockstat[proto].inuse) / n,
    fds: b.fds,
    rssBytes: b.rssBytes,
  };
}

/** The bench side: runs the idle measurement in a fresh process of `script`. */
/**
 * Runs the idle worker, in network namespace `ns` when given (the packet path's server side, where
 * the daemon runs: both ends of each session then count in that namespace's sockstat, as on loopback).
 */
export async function measureIdle(script: string, config: IdleWorkerConfig, ns: string | null = null, timeoutMs = 180_000): Promise<IdleResult> {
  const node = ['--expose-gc', script, IDLE_FLAG, JSON.stringify(config)];
  const worker = await startWorkerProcess({
    name: `the idle ${config.transport} worker`,
    ...(ns === null ? { args: node } : { command: 'ip', args: ['netns', 'exec', ns, process.execPath, ...node] }),
    startTimeoutMs: timeoutMs,
    // Its only announcement is its result: the measurement is done when it is "ready".
    ready: (line) => {
      const m = /^RESULT (.*)$/.exec(line);
      return m === null ? null : (JSON.parse(m[1] ?? 'null') as IdleResult);
    },
  });
  await worker.exited;
  return worker.ready;
}
