// The pooler: accepts client sessions from any number of listeners (TCP, TLS, QUIC, memory) and
// serves them from pools of real server connections. This file assembles the pieces (the core,
// one driver per session, listeners) and owns the shutdown sequence.
import type { SessionListener } from '@quicpool/transport';
import { resolvePoolerConfig } from './config/pooler-config.js';
import type { PoolerConfig, ResolvedPoolerConfig } from './config/pooler-config.js';
import { realClock } from './core/clock.js';
import type { Clock } from './core/clock.js';
import { PoolerCore } from './core/pooler-core.js';
import type { VirtualDatabase } from './core/pooler-core.js';
import type { PoolerEvents, PoolerView } from './core/view.js';
import { ClientConnection } from './driver/client-connection.js';
import type { PoolStats } from './pool/pool.js';

export interface CloseOptions {
  /** Let transactions in progress finish (up to deadlineMs) before closing their clients. Default true. */
  readonly graceful?: boolean;
  /** Longest graceful drain, then everything left is closed with 57P01. Default 30 000 ms. */
  readonly deadlineMs?: number;
}

/** Counts of a running pooler (cheap; `view()` has the rows). */
export interface PoolerStats {
  /** Client sessions open now (including those still in startup). */
  readonly clients: number;
  readonly clientsAcceptedTotal: number;
  readonly clientsRefusedTotal: number;
  readonly cancelRequestsTotal: number;
  readonly cancelsForwardedTotal: number;
  readonly pools: readonly (PoolStats & { readonly database: string; readonly user: string; readonly clients: number })[];
}

export interface Pooler {
  readonly config: ResolvedPoolerConfig;
  /** Serve the sessions of `listener` (any transport). The pooler closes it on close(). */
  listen(listener: SessionListener): void;
  close(options?: CloseOptions): Promise<void>;
  stats(): PoolerStats;
  /** Everything an observer may show (SHOW CLIENTS / POOLS / SERVERS, metrics), as of now. */
  view(): PoolerView;
  /** Client and transaction events (logs, metrics). */
  readonly events: PoolerEvents;
  /**
   * PAUSE: new transactions wait, running ones finish. Resolves true once no server connection is
   * lent to a client, false when `timeoutMs` passed first (the pooler stays paused either way).
   */
  pause(timeoutMs: number): Promise<boolean>;
  resume(): void;
  /** Serve `database` in process (the admin console): clients reach it through the pooler as any database. */
  serveDatabase(database: string, vdb: VirtualDatabase): void;
  /**
   * Applies a new config to the running pooler (users, pool settings, limits, server address for
   * new backends); sessions stay open. Throws ConfigError and keeps the old config when invalid.
   */
  reconfigure(config: PoolerConfig): ResolvedPoolerConfig;
}

export interface PoolerOptions {
  /** Time for every timeout and duration. Default: the process's monotonic clock and Node timers. */
  readonly clock?: Clock;
}

export function createPooler(config: PoolerConfig, options: PoolerOptions = {}): Pooler {
  const core = new PoolerCore(resolvePoolerConfig(config), options.clock ?? realClock);
  const listeners = new Set<SessionListener>();
  let closing: Promise<void> | null = null;
  /** The graceful drain in progress: close({ graceful: false }) cuts it short. */
  let drain: { cut(): void } | null = null;

  async function doClose(o: CloseOptions): Promise<void> {
    const graceful = o.graceful ?? true;
    core.stopAccepting();
    const listenersClosed = [...listeners].map((l) => l.close({ graceful: true }));
    core.shutdownClients(graceful);
    if (graceful) {
      core.closePools(false);
      const wait = core.clientsGone(o.deadlineMs ?? 30_000);
      drain = wait;
      await wait.done;
      drain = null;
      core.shutdownClients(false);
    }
    core.closePools(true);
    await core.clientsGone(5_000).done;
    await Promise.all([...listenersClosed, core.settled()]);
  }

  return {
    get config(): ResolvedPoolerConfig {
      return core.config;
    },
    events: core.events,
    view: () => core.view(),
    pause: (timeoutMs) => core.pause(timeoutMs),
    resume: () => core.resume(),
    serveDatabase: (database, vdb) => core.addVirtualDatabase(database, vdb),
    reconfigure(next: PoolerConfig): ResolvedPoolerConfig {
      const resolved = resolvePoolerConfig(next);
      core.config = resolved;
      return resolved;
    },
    listen(listener: SessionListener): void {
      if (closing !== null) throw new Error('pooler is closed');
      listeners.add(listener);
      listener.onSession((stream) => {
        if (closing !== null) {
          stream.destroy();
          return;
        }
        core.add(new ClientConnection(stream, core));
      });
    },
    close(o: CloseOptions = {}): Promise<void> {
      if (closing !== null && o.graceful === false) drain?.cut();
      closing ??= doClose(o);
      return closing;
    },
    stats(): PoolerStats {
      const v = core.view();
      return {
        clients: v.clients.length,
        clientsAcceptedTotal: v.clientsAcceptedTotal,
        clientsRefusedTotal: v.clientsRefusedTotal,
        cancelRequestsTotal: v.cancelRequestsTotal,
        cancelsForwardedTotal: v.cancelsForwardedTotal,
        pools: v.pools.filter((p) => !p.virtual),
      };
    },
  };
}
