// The admin console's view of the daemon, from the main thread: what the pooler (one worker or
// all of them) shows, plus the daemon's own answers. With worker threads, the console sessions
// run in the workers and reach this over messages (workers/supervisor.ts serves it).
import type { AdminContext } from '@quicpool/pooler';
import type { DaemonHooks, Serving } from './serving.js';

export function daemonAdminContext(serving: Serving, hooks: DaemonHooks): AdminContext {
  return {
    view: () => serving.view(),
    quic: () => serving.quic(),
    workers: () => serving.workers(),
    pause: () => serving.pause(hooks.pauseTimeoutMs()),
    resume: () => serving.resume(),
    config: () => Promise.resolve(hooks.config()),
    reload: () => hooks.reload(),
    shutdown: () => hooks.shutdown(),
    killWorker: (n) => serving.killWorker(n),
  };
}
