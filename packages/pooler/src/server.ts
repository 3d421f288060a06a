// The pooler: accepts client sessions from any number of listeners (TCP, TLS, QUIC, memory) and
// serves them from pools of real server connections.
import type { SessionListener } from '@quicpool/transport';
import { resolvePoolerConfig } from './config/pooler-config.js';
import type { PoolerConfig, ResolvedPoolerConfig } from './config/pooler-config.js';
import { PoolerCore } from './driver/pooler-core.js';
import type { PoolerStats } from './driver/pooler-core.js';
import type { PoolerControl } from './admin/control.js';

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
  /** Operator hooks: PAUSE/RESUME, the admin database route, SHOW facts (see admin/control.ts). */
  readonly control: PoolerControl;
  /**
   * Applies a new config to the running pooler (users, pool settings, limits, server address for
   * new backends); sessions stay open. Throws ConfigError and keeps the old config when invalid.
   */
  reconfigure(config: PoolerConfig): ResolvedPoolerConfig;
}

export function createPooler(config: PoolerConfig): Pooler {
  const resolved = resolvePoolerConfig(config);
  const core = new PoolerCore(resolved);
  const listeners = new Set<SessionListener>();
  let closing: Promise<void> | null = null;
  /** Set by close({ graceful: false }) during a graceful close: cut the drain short. */
  let forced = false;

  const waitForClients = (deadline: number): Promise<boolean> =>
    new Promise<boolean>((resolve) => {
      const tick = (): void => {
        if (core.clients.size === 0) return resolve(true);
        if (Date.now() >= deadline || forced) return resolve(false);
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
    get config(): ResolvedPoolerConfig {
      return core.config;
    },
    control: core.control,
    reconfigure(config: PoolerConfig): ResolvedPoolerConfig {
      const next = resolvePoolerConfig(config);
      core.config = next;
      return next;
    },
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
      if (closing !== null && options.graceful === false) forced = true;
      closing ??= doClose(options);
      return closing;
    },
    stats: () => core.stats(),
  };
}
