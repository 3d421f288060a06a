// (b) The cost of one idle session: a worker process (with --expose-gc) opens `warmup` connected clients,
// samples, opens the rest up to `sessions`, samples again; the difference per added session is its RSS,
// kernel socket memory (/proc/net/sockstat), sockets and fds. Straight to the pooler, not across the WAN
// (the delay does not change an idle session's cost, and a relay's own sockets would count in sockstat):
// on the packet path the worker runs in the daemon's namespace, so both ends count there, as on loopback.
import pg from 'pg';
import { QuicClient, SessionManager } from '@quicpool/client';
import { IDLE_FLAG } from '../commands/worker-flags.js';
import { startWorkerProcess } from '../process/worker-process.js';
import { getconfNumber } from '../telemetry/proc.js';
import type { BenchTargets, Login } from './connect.js';
import { openMany, quicManagerOptions, tlsClientConfig } from './connect.js';
import { sampleMemory } from './proc-memory.js';
import type { MemorySample } from './proc-memory.js';

export interface IdleWorkerConfig {
  readonly transport: 'tcp' | 'quic';
  readonly sessions: number;
  readonly warmup: number;
  readonly targets: BenchTargets;
  readonly login: Login;
  readonly quicConnections: number;
  readonly streamsPerConnection: number;
}

export type IdleResult = ReturnType<typeof perSession>;

/** Lets the sessions settle, then collects garbage (the worker runs with --expose-gc). */
async function quiesce(): Promise<void> {
  await new Promise((r) => setTimeout(r, 500));
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('run the idle worker with --expose-gc');
  gc();
  gc();
}

/** The worker side: measures and prints "RESULT {json}". */
export async function runIdleWorker(c: IdleWorkerConfig): Promise<void> {
  const clients: pg.Client[] = [];
  const quic = { maxConnections: c.quicConnections, streamsPerConnection: c.streamsPerConnection, idleTimeoutMs: 0 };
  const manager = c.transport === 'quic' ? new SessionManager(quicManagerOptions(c.targets, quic)) : null;
  const open = async (): Promise<void> => {
    const client = manager === null ? new pg.Client(tlsClientConfig(c.targets, c.login)) : new QuicClient({ ...c.login, sessions: manager });
    client.on('error', () => undefined);
    await client.connect();
    clients.push(client);
  };
  try {
    await openMany(c.warmup, 50, open);
    await quiesce();
    const before = sampleMemory();
    await openMany(c.sessions - c.warmup, 100, open);
    // Every session is connected and idle; the check makes sure none was lost on the way.
    await Promise.all(clients.map((client) => client.query('select 1')));
    await quiesce();
    const after = sampleMemory();
    process.stdout.write(`RESULT ${JSON.stringify(perSession(c.transport, before, after, c.sessions - c.warmup))}\n`);
  } finally {
    await Promise.allSettled(clients.map((client) => client.end()));
    await manager?.close({ timeoutMs: 2_000 });
  }
}

/** Per added session between the two samples `a` and `b`; kernel memory and sockets are system-wide (all ends): TCP's for tcp, UDP's for quic. */
function perSession(transport: IdleWorkerConfig['transport'], a: MemorySample, b: MemorySample, n: number) {
  const proto = transport === 'tcp' ? 'tcp' : 'udp';
  const rss = (b.rssBytes - a.rssBytes) / n;
  // sockstat's `mem` counts memory pages.
  const kernel = ((b.sockstat[proto].memPages - a.sockstat[proto].memPages) * getconfNumber('PAGESIZE', 4096)) / n;
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
    // Totals at the second sample.
    fds: b.fds,
    rssBytes: b.rssBytes,
  };
}

/** The bench side: runs the idle worker (a fresh process of `script`), in network namespace `ns` when given. */
export async function measureIdle(script: string, config: IdleWorkerConfig, ns: string | null = null): Promise<IdleResult> {
  const node = ['--expose-gc', script, IDLE_FLAG, JSON.stringify(config)];
  const worker = await startWorkerProcess({
    name: `the idle ${config.transport} worker`,
    ...(ns === null ? { args: node } : { command: 'ip', args: ['netns', 'exec', ns, process.execPath, ...node] }),
    startTimeoutMs: 180_000,
    // Its only announcement is its result: the measurement is done when it is "ready".
    ready: (line) => {
      const m = /^RESULT (.*)$/.exec(line);
      return m === null ? null : (JSON.parse(m[1] ?? 'null') as IdleResult);
    },
  });
  await worker.exited;
  return worker.ready;
}
