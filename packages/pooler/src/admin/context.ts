// The admin context of one pooler in this thread: what a daemon with a single worker, and a
// test, give the admin console. A daemon with worker threads builds its context over messages to
// its main thread instead (every answer for the whole daemon).
import type { Pooler } from '../server.js';
import type { AdminContext, ConfigRow, QuicListenerRow } from './commands.js';

/** What a daemon adds to its pooler; everything but the PAUSE timeout has a default for a bare pooler. */
export interface AdminDaemon {
  /** Longest PAUSE waits for running transactions (ms), read at each PAUSE. */
  readonly pauseTimeoutMs: number;
  quic?(): readonly QuicListenerRow[];
  config?(): readonly ConfigRow[];
  reload?(): Promise<string>;
  shutdown?(): void;
  /** CPU time of the thread so far (ms), for SHOW WORKERS. */
  cpuMs?(): number | null;
}

export function poolerAdminContext(pooler: Pooler, d: AdminDaemon): AdminContext {
  return {
    view: () => Promise.resolve(pooler.view()),
    quic: () => Promise.resolve(d.quic?.() ?? []),
    workers: () => {
      const v = pooler.view();
      return Promise.resolve([{ worker: 0, thread: 0, state: 'running', clients: v.clients.length, servers: v.servers.length, cpuMs: d.cpuMs?.() ?? null, restarts: 0, cancelRequests: v.cancelRequestsTotal, cancelsForwarded: v.cancelsForwardedTotal }]);
    },
    pause: () => pooler.pause(d.pauseTimeoutMs),
    resume: () => Promise.resolve(pooler.resume()),
    config: () => Promise.resolve(d.config?.() ?? []),
    reload: () => d.reload?.() ?? Promise.reject(new Error('there is no configuration file to reload')),
    shutdown: () => d.shutdown?.(),
    killWorker: () => Promise.reject(new Error('this pooler runs its one worker in the main thread; KILL WORKER needs worker threads (workers.count > 1)')),
  };
}
