// One worker thread of the daemon: its own event loop, pooler, listeners and timers. It listens
// on dups of its members of the daemon's TCP and UDP reuseport groups (the kernel hands it its
// share of TCP connections; the steering program, the datagrams of its QUIC connections), counts
// clients and server connections in the daemon-wide shared counts, and answers the main thread's
// calls. Its admin console sessions answer for the whole daemon by asking the main thread.
import { parentPort, threadId, workerData } from 'node:worker_threads';
import { adminDatabase, createAdminCommands, createPooler } from '@quicpool/pooler';
import type { AdminContext, Pooler } from '@quicpool/pooler';
import { listenTcp, QuicListener } from '@quicpool/transport';
import { dupSocket } from '@quicpool/udp';
import { createLogger } from '../logger.js';
import { createMetrics } from '../metrics.js';
import { logClientEvent } from '../serve/client-log.js';
import { logUpstreamEvent } from '../serve/upstream-log.js';
import { quicRow } from '../serve/quic-row.js';
import { threadCpuMs } from '../serve/thread-cpu.js';
import type { MainOps, MetricJson, WorkerData, WorkerOps } from './protocol.js';
import { Rpc } from './rpc.js';

/** How long a failed worker gives its clients' error messages to leave before the thread ends. */
const FAILURE_FLUSH_MS = 1_000;

const data = workerData as WorkerData;
const port = parentPort;
if (port === null) throw new Error('worker-main runs as a worker thread of quicpool start');

const log = createLogger(data.log.level, data.log.format).child({ worker: data.index });
const pooler: Pooler = createPooler(data.pooler, { worker: { index: data.index, count: data.count, shared: data.shared, groupId: data.groupId } });
let quic: QuicListener | null = null;
const registry = createMetrics(pooler, () => (quic === null ? [] : [quicRow(quic, data.index)]), { process: false });
let adminUsers = new Set(data.adminUsers);
let failing = false;

/**
 * An error nothing caught (or KILL WORKER): every client session of this worker gets 57P01 (a
 * crash must not leave them hanging), then the thread ends and the main thread replaces it.
 */
function fail(reason: string, err: unknown): void {
  if (failing) return;
  failing = true;
  log.fatal({ reason, err: err instanceof Error ? err.stack ?? err.message : String(err) }, 'worker failed: closing its client sessions and exiting');
  const closed = pooler.close({ graceful: false });
  const timer = new Promise((r) => setTimeout(r, FAILURE_FLUSH_MS).unref());
  void Promise.race([closed, timer]).finally(() => process.exit(1));
}
process.on('uncaughtException', (e) => fail('uncaught exception', e));
process.on('unhandledRejection', (e) => fail('unhandled promise rejection', e));

const rpc = new Rpc<MainOps, WorkerOps>(port, {
  view: () => pooler.view(),
  quic: () => (quic === null ? [] : [quicRow(quic, data.index)]),
  metrics: async () => (await registry.getMetricsAsJSON()) as unknown as MetricJson[],
  stats: () => {
    const v = pooler.view();
    return { thread: threadId, clients: v.clients.length, servers: v.servers.length, cpuMs: threadCpuMs(), cancelRequests: v.cancelRequestsTotal, cancelsForwarded: v.cancelsForwardedTotal };
  },
  pause: (timeoutMs) => pooler.pause(timeoutMs),
  resume: () => pooler.resume(),
  reconfigure: (config, live) => {
    pooler.reconfigure(config);
    log.level = live.logLevel;
    adminUsers = new Set(live.adminUsers);
  },
  close: async (graceful, deadlineMs) => {
    await pooler.close({ graceful, deadlineMs });
    // After the answer has left: the thread ends once nothing is left on its loop.
    setImmediate(() => process.exit(0));
  },
  crash: (reason) => {
    setImmediate(() => {
      throw new Error(reason);
    });
  },
});

// Whatever the console asks is for the whole daemon: the main thread adds up every worker's answer.
const admin: AdminContext = {
  view: () => rpc.call('view'),
  quic: () => rpc.call('quic'),
  workers: () => rpc.call('workers'),
  pause: () => rpc.call('pause'),
  resume: () => rpc.call('resume'),
  config: () => rpc.call('config'),
  reload: () => rpc.call('reload'),
  shutdown: () => void rpc.call('shutdown'),
  killWorker: (n) => rpc.call('killWorker', n),
};

pooler.events.client.add((e) => logClientEvent(log, e));
pooler.events.upstream.add((e) => logUpstreamEvent(log, e));
pooler.serveDatabase(data.adminDatabase, adminDatabase(createAdminCommands(admin), () => adminUsers));

const tcp = await listenTcp({ fd: dupSocket(data.tcpFd) });
pooler.listen(tcp);
if (data.quic !== null && data.udpFd !== null) {
  const q = data.quic;
  quic = await QuicListener.listen({
    cert: q.cert, key: q.key, alpn: q.alpn, idleTimeoutMs: q.idleTimeoutMs,
    maxStreamsPerConnection: q.maxStreamsPerConnection, maxConnections: q.maxConnections, earlyData: q.earlyData,
    ticketKey: q.ticketKey, retryKey: q.retryKey, statelessResetKey: q.statelessResetKey,
    ...(q.clientCa !== undefined ? { clientCa: q.clientCa } : {}),
    socketFd: data.udpFd,
    worker: { index: data.index, count: data.quicWorkers },
    // Steering needs the native module; a worker without it must not run at all (see plan.ts).
    udpIo: 'native',
  });
  pooler.listen(quic);
}
await rpc.call('ready', { tcp: tcp.address().port, quic: quic?.address().port ?? null });
