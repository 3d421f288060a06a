// The pooler: accepts client sessions from any number of listeners (TCP, TLS, QUIC, memory) and
// serves them from pools of real server connections.
import type { SessionListener } from '@quicpool/transport';
import { resolvePoolerConfig } from './config/pooler-config.js';
import type { PoolerConfig, ResolvedPoolerConfig } from './config/pooler-config.js';
import { PoolerCore } from './driver/pooler-core.js';
import type { PoolerStats } from './driver/pooler-core.js';

export interface CloseOptions {
  /** Let transactions in progress finish (up to deadlineMs) before closing their clients. Default true. */
  readonly graceful?: boolean;
  /** Longest graceful drain, then everything left is closed with 57P01. Default 30 000 ms. */
  readonly deadlineMs?: number;
}

export interface Pooler {
  readonly config: ResolvedPoolerConfig;
  /** Serve the sessions of `listener` (any transport). The pooler closes it on close(). */
  listen(listener: SessionListener): void;
  close(options?: CloseOptions): Promise<void>;
  stats(): PoolerStats;
}

export function createPooler(config: PoolerConfig): Pooler {
  const resolved = resolvePoolerConfig(config);
  const core = new PoolerCore(resolved);
  const listeners = new Set<SessionListener>();
  let closing: Promise<void> | null = null;

  const waitForClients = (deadline: number): Promise<boolean> =>
    new Promise<boolean>((resolve) => {
      const tick = (): void => {
        if (core.clients.size === 0) return resolve(true);
        if (Date.now() >= deadline) return resolve(false);
        setTimeout(tick, 20);
      };
      tick();
    });

  async function doClose(options: CloseOptions): Promise<void> {
    const graceful = options.graceful ?? true;
    core.stopAccepting();
    const listenersClosed = [...listeners].map((l) => l.close({ graceful: true }));
    for (const c of [...core.clients]) c.dispatch({ type: 'shutdown', graceful });
    if (graceful) {
      core.closePools(false);
      await waitForClients(Date.now() + (options.deadlineMs ?? 30_000));
      for (const c of [...core.clients]) c.dispatch({ type: 'shutdown', graceful: false });
    }
    core.closePools(true);
    await waitForClients(Date.now() + 5_000);
    await Promise.all([...listenersClosed, core.settled()]);
  }

  return {
    config: resolved,
    listen(listener: SessionListener): void {
      if (closing !== null) throw new Error('pooler is closed');
      listeners.add(listener);
      listener.onSession((stream) => {
        if (closing !== null) {
          stream.destroy();
          return;
        }
        core.accept(stream);
      });
    },
    close(options: CloseOptions = {}): Promise<void> {
      closing ??= doClose(options);
      return closing;
    },
    stats: () => core.stats(),
  };
}
