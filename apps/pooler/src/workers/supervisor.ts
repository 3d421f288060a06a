// The main thread of a daemon with worker threads. It makes the sockets (one TCP and one UDP
// reuseport group, a member per worker, the UDP one steered by connection id), the shared counts
// and the keys, starts the workers and replaces one that dies, and answers for the whole daemon:
// the admin console's questions (asked by whichever worker holds the console session), /metrics,
// PAUSE/RESUME/RELOAD to every worker, the drain. No client connection passes through it.
import { randomUUID } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { mergeViews, resolvePoolerConfig, SharedCounts } from '@quicpool/pooler';
import type { PoolerView, WorkerRow } from '@quicpool/pooler';
import { quicSteeringProgram } from '@quicpool/transport';
import { reuseportGroup } from '@quicpool/udp';
import type { SocketGroup } from '@quicpool/udp';
import { collectDefaultMetrics, Registry } from 'prom-client';
import type { Logger } from '../logger.js';
import { aggregatedExposition, workerMetrics } from '../metrics.js';
import { daemonAdminContext } from '../serve/admin.js';
import type { DaemonHooks, Serving, ServeOptions, WorkerLayout } from '../serve/serving.js';
import type { LiveSettings, MainOps, MetricJson, WorkerData, WorkerOps, WorkerStats } from './protocol.js';
import { Rpc } from './rpc.js';
import type { Handlers } from './rpc.js';

/** A worker that does not report ready within this is a failed start. */
const START_TIMEOUT_MS = 30_000;
/** How long a question to a worker may take before SHOW WORKERS shows it without figures. */
const ASK_TIMEOUT_MS = 2_000;
/** Delay before a dead worker is replaced: doubles while replacements die young, up to the cap. */
const RESTART_DELAY_MS = 100;
const RESTART_DELAY_MAX_MS = 5_000;
/** A replacement that lived this long resets the delay. */
const HEALTHY_AFTER_MS = 10_000;
/** A worker asked to stop gets this long beyond the drain deadline before it is terminated. */
const STOP_GRACE_MS = 5_000;
const UDP_BUFFER_BYTES = 4 * 1024 * 1024;

interface Slot {
  readonly index: number;
  worker: Worker | null;
  rpc: Rpc<WorkerOps, MainOps> | null;
  state: WorkerRow['state'];
  restarts: number;
  startedAt: number;
  restartDelayMs: number;
  exited: Promise<void>;
}

export async function serveWithWorkers(o: ServeOptions, count: number, log: Logger, hooks: DaemonHooks, note: string | null): Promise<Serving> {
  const tcp = reuseportGroup({ protocol: 'tcp', host: o.host, port: o.tcpPort, count });
  let udp: SocketGroup | null = null;
  let layout: WorkerLayout = { count, quic: 'off', note };
  try {
    if (o.quic !== null) {
      const buffers = { recvBufferBytes: UDP_BUFFER_BYTES, sendBufferBytes: UDP_BUFFER_BYTES };
      udp = reuseportGroup({ protocol: 'udp', host: o.host, port: o.quic.port, count, program: quicSteeringProgram(count), ...buffers });
      layout = { count, quic: 'steered by connection id (BPF)', note };
      if (udp.steering.kind !== 'bpf') {
        // Without steering a connection's datagrams would land on any worker: QUIC stays in one.
        const why = udp.steering.reason;
        udp.close();
        udp = reuseportGroup({ protocol: 'udp', host: o.host, port: o.quic.port, count: 1, ...buffers });
        layout = { count, quic: 'in worker 0', note: `QUIC runs in worker 0 only: ${why}` };
        log.warn({ reason: why }, 'the kernel refused the QUIC steering program: worker 0 serves every QUIC connection, all workers serve TCP');
      }
    }
  } catch (e) {
    tcp.close();
    udp?.close();
    throw e;
  }
  const quicWorkers = udp === null ? 0 : udp.fds.length;
  const shared = SharedCounts.allocate(count) as SharedArrayBuffer;
  const counts = new SharedCounts(shared, count);
  const groupId = randomUUID();
  let config = o.pooler;
  let live: LiveSettings = { logLevel: o.log.level, adminUsers: o.adminUsers };
  let stopping = false;
  const slots: Slot[] = Array.from({ length: count }, (_, index) => ({ index, worker: null, rpc: null, state: 'starting', restarts: 0, startedAt: 0, restartDelayMs: RESTART_DELAY_MS, exited: Promise.resolve() }));
  const started: Promise<void>[] = [];
  const readyWaiters = new Map<number, () => void>();

  const running = (): Slot[] => slots.filter((s) => s.state === 'running' && s.rpc !== null);
  const ask = <T>(p: Promise<T>): Promise<T | null> =>
    Promise.race([p.catch(() => null), new Promise<null>((r) => setTimeout(() => r(null), ASK_TIMEOUT_MS).unref())]);

  const view = async (): Promise<PoolerView> => {
    const views = await Promise.all(running().map((s) => ask(s.rpc!.call('view'))));
    return mergeViews(views.filter((v): v is PoolerView => v !== null));
  };
  const workers = async (): Promise<WorkerRow[]> =>
    Promise.all(
      slots.map(async (s) => {
        const st: WorkerStats | null = s.state === 'running' && s.rpc !== null ? await ask(s.rpc.call('stats')) : null;
        return {
          worker: s.index, thread: st?.thread ?? s.worker?.threadId ?? 0, state: s.state, clients: st?.clients ?? 0, servers: st?.servers ?? 0,
          cpuMs: st?.cpuMs ?? null, restarts: s.restarts, cancelRequests: st?.cancelRequests ?? 0, cancelsForwarded: st?.cancelsForwarded ?? 0,
        };
      }),
    );

  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'quicpool_' });
  workerMetrics(registry, workers);

  const serving: Serving = {
    tcpPort: tcp.port,
    quicPort: udp?.port,
    layout,
    view,
    quic: async () => (await Promise.all(running().map((s) => ask(s.rpc!.call('quic'))))).flatMap((r) => r ?? []),
    workers,
    pause: async (timeoutMs) => (await Promise.all(running().map((s) => s.rpc!.call('pause', timeoutMs)))).every(Boolean),
    resume: async () => void (await Promise.all(running().map((s) => s.rpc!.call('resume')))),
    async killWorker(n) {
      const s = slots[n];
      if (s === undefined) throw new Error(`no worker ${n}: the workers are 0-${count - 1}`);
      if (s.state !== 'running' || s.rpc === null) throw new Error(`worker ${n} is ${s.state}`);
      await s.rpc.call('crash', `KILL WORKER ${n} from the admin console`);
      return `worker ${n} killed; it is being replaced`;
    },
    async reconfigure(next, nextLive) {
      resolvePoolerConfig(next); // throws ConfigError: nothing applied anywhere
      config = next;
      live = nextLive;
      await Promise.all(running().map((s) => s.rpc!.call('reconfigure', next, nextLive)));
    },
    metrics: aggregatedExposition(registry, async () => (await Promise.all(running().map((s) => ask(s.rpc!.call('metrics'))))).filter((m): m is MetricJson[] => m !== null)),
    async close(graceful, deadlineMs) {
      if (!stopping) {
        stopping = true;
        tcp.close(); // the kernel takes no new TCP connection once the workers close their dups too
      }
      await Promise.all(
        slots.map(async (s) => {
          if (s.worker === null) return;
          s.state = 'stopping';
          const w = s.worker;
          const kill = setTimeout(() => void w.terminate(), (graceful ? deadlineMs : 0) + STOP_GRACE_MS);
          await s.rpc?.call('close', graceful, deadlineMs).catch(() => undefined);
          await s.exited;
          clearTimeout(kill);
        }),
      );
      // Only now: a UDP member closed early would shift the steering program's socket indexes.
      udp?.close();
    },
  };
  const admin = daemonAdminContext(serving, hooks);

  const handlers = (s: Slot): Handlers<MainOps> => ({
    ready: () => {
      s.state = 'running';
      readyWaiters.get(s.index)?.();
    },
    view: () => admin.view(),
    quic: () => admin.quic(),
    workers: () => admin.workers(),
    pause: () => admin.pause(),
    resume: () => admin.resume(),
    config: () => admin.config(),
    reload: () => admin.reload(),
    shutdown: () => admin.shutdown(),
    killWorker: (n) => admin.killWorker(n),
  });

  const spawn = (s: Slot): Promise<void> => {
    const data: WorkerData = {
      index: s.index, count, shared, groupId, pooler: config, tcpFd: tcp.fds[s.index]!,
      udpFd: udp === null ? null : (udp.fds[s.index] ?? null), quic: o.quic, quicWorkers,
      adminDatabase: o.adminDatabase, adminUsers: live.adminUsers, log: { level: live.logLevel, format: o.log.format },
    };
    const worker = new Worker(new URL('./worker.js', import.meta.url), { workerData: data, stdout: false, stderr: false });
    s.worker = worker;
    s.state = s.restarts === 0 ? 'starting' : 'restarting';
    s.startedAt = performance.now();
    s.rpc = new Rpc<WorkerOps, MainOps>(worker, handlers(s));
    worker.on('error', (e) => log.error({ worker: s.index, err: e.stack ?? e.message }, 'worker error'));
    let exit: () => void = () => undefined;
    s.exited = new Promise((r) => (exit = r));
    worker.once('exit', (code) => {
      s.rpc?.close(new Error(`worker ${s.index} exited (${code})`));
      s.rpc = null;
      s.worker = null;
      exit();
      readyWaiters.get(s.index)?.();
      if (stopping) return void (s.state = 'stopping');
      // Its clients, servers and wishes leave the daemon-wide counts: the budget comes back.
      counts.forgetWorker(s.index);
      s.restarts++;
      s.state = 'restarting';
      s.restartDelayMs = performance.now() - s.startedAt > HEALTHY_AFTER_MS ? RESTART_DELAY_MS : Math.min(s.restartDelayMs * 2, RESTART_DELAY_MAX_MS);
      log.warn({ worker: s.index, code, restartInMs: s.restartDelayMs, restarts: s.restarts }, 'worker exited: replacing it');
      setTimeout(() => {
        if (stopping) return;
        void spawn(s).then(() => log.info({ worker: s.index, restarts: s.restarts }, 'worker replaced'));
      }, s.restartDelayMs).unref();
    });
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`worker ${s.index} did not start within ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
      readyWaiters.set(s.index, () => {
        clearTimeout(timer);
        readyWaiters.delete(s.index);
        if (s.state === 'running') resolve();
        else reject(new Error(`worker ${s.index} exited while starting (see its log line)`));
      });
    });
  };

  for (const s of slots) started.push(spawn(s));
  try {
    await Promise.all(started);
  } catch (e) {
    await serving.close(false, 0);
    tcp.close();
    throw e;
  }
  return serving;
}

