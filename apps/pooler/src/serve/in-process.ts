// One worker: the pooler, its TCP and QUIC listeners and the admin console in the main thread,
// as quicpool ran before it had workers (workers.count = 1, or no native UDP module).
import { adminDatabase, createAdminCommands, createPooler } from '@quicpool/pooler';
import type { WorkerRow } from '@quicpool/pooler';
import { listenTcp, QuicListener } from '@quicpool/transport';
import type { Logger } from '../logger.js';
import { createMetrics, expositionOf, workerMetrics } from '../metrics.js';
import { daemonAdminContext } from './admin.js';
import { logClientEvent } from './client-log.js';
import { logUpstreamEvent } from './upstream-log.js';
import { quicRow } from './quic-row.js';
import type { DaemonHooks, Serving, ServeOptions, WorkerLayout } from './serving.js';
import { threadCpuMs } from './thread-cpu.js';

export async function serveInProcess(o: ServeOptions, log: Logger, hooks: DaemonHooks, note: string | null): Promise<Serving> {
  const pooler = createPooler(o.pooler);
  pooler.events.client.add((e) => logClientEvent(log, e));
  pooler.events.upstream.add((e) => logUpstreamEvent(log, e));
  let adminUsers = new Set(o.adminUsers);
  let quic: QuicListener | null = null;
  const quicRows = () => (quic === null ? [] : [quicRow(quic, 0)]);
  const layout: WorkerLayout = { count: 1, quic: o.quic === null ? 'off' : 'in worker 0', note };
  const workers = (): Promise<WorkerRow[]> => {
    const v = pooler.view();
    return Promise.resolve([{ worker: 0, thread: 0, state: 'running', clients: v.clients.length, servers: v.servers.length, cpuMs: threadCpuMs(), restarts: 0, cancelRequests: v.cancelRequestsTotal, cancelsForwarded: v.cancelsForwardedTotal }]);
  };
  const registry = createMetrics(pooler, quicRows);
  workerMetrics(registry, workers);

  const serving: Serving = {
    tcpPort: 0,
    quicPort: undefined,
    layout,
    view: () => Promise.resolve(pooler.view()),
    quic: () => Promise.resolve(quicRows()),
    workers,
    pause: (timeoutMs) => pooler.pause(timeoutMs),
    resume: () => Promise.resolve(pooler.resume()),
    killWorker: () => Promise.reject(new Error('quicpool runs its one worker in the main thread; KILL WORKER needs worker threads (workers.count > 1)')),
    reconfigure(config, live): Promise<void> {
      pooler.reconfigure(config);
      adminUsers = new Set(live.adminUsers);
      return Promise.resolve();
    },
    metrics: expositionOf(registry),
    close: (graceful, deadlineMs) => pooler.close({ graceful, deadlineMs }),
  };
  // The admin console: a database served in process; admin users log in to it like any database.
  pooler.serveDatabase(o.adminDatabase, adminDatabase(createAdminCommands(daemonAdminContext(serving, hooks)), () => adminUsers));

  try {
    const tcp = await listenTcp({ host: o.host, port: o.tcpPort });
    pooler.listen(tcp);
    if (o.quic !== null) {
      const q = o.quic;
      quic = await QuicListener.listen({
        cert: q.cert, key: q.key, host: o.host, port: q.port, alpn: q.alpn, idleTimeoutMs: q.idleTimeoutMs,
        maxStreamsPerConnection: q.maxStreamsPerConnection, maxConnections: q.maxConnections, earlyData: q.earlyData,
        ticketKey: q.ticketKey, retryKey: q.retryKey, statelessResetKey: q.statelessResetKey,
        ...(q.clientCa !== undefined ? { clientCa: q.clientCa } : {}),
      });
      pooler.listen(quic);
    }
    return { ...serving, tcpPort: tcp.address().port, quicPort: quic?.address().port };
  } catch (e) {
    await pooler.close({ graceful: false });
    throw e;
  }
}
