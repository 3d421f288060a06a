// The pooler: accepts client sessions from any number of listeners (TCP, TLS, QUIC, memory) and
// serves them from pools of real server connections. This file assembles the pieces (the core,
// one driver per session, listeners) and owns the shutdown sequence. A pooler is one worker of a
// daemon (`worker`: the daemon runs one per thread), or several cores in this thread (`workers`).
import { randomUUID } from 'node:crypto';
import type { SessionListener, SessionStream } from '@quicpool/transport';
import { resolvePoolerConfig } from './config/pooler-config.js';
import type { PoolerConfig, ResolvedPoolerConfig } from './config/pooler-config.js';
import { realClock } from './runtime/clock.js';
import type { Clock } from './runtime/clock.js';
import { PoolerCore } from './core/pooler-core.js';
import type { VirtualDatabase } from './core/pooler-core.js';
import type { PoolerEvents, PoolerView } from './core/view.js';
import { ClientConnection } from './driver/client-connection.js';
import type { PoolStats } from './pool/pool.js';
import { mergeViews } from './core/merge-views.js';
import { SharedCounts } from './workers/shared-counts.js';
import type { PoolerWorker } from './workers/worker.js';

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
  /** This pooler is one worker of a daemon whose workers run in threads of their own. */
  readonly worker?: PoolerWorker;
  /**
   * Cores in this thread (default 1). Each has its own pools, timers and cancel keys and they
   * share the daemon-wide limits and server budget exactly as a daemon's workers do (same
   * shared counts, same peer channel). A new session goes to the core with the fewest sessions
   * (the first of those), all sessions of a QUIC connection to the core of its first. For tests of
   * that sharing and for embedding; the daemon runs one per thread (there the kernel spreads
   * connections).
   */
  readonly workers?: number;
  /**
   * A transaction of one plain Query in transaction pooling goes from the client's read to the
   * server and back without the session machine's events (driver/plain-lane.md). Default true,
   * unless the environment says QUICPOOL_PLAIN_LANE=0; false sends every message through the
   * machine (for comparisons, or should the lane ever be suspected).
   */
  readonly plainLane?: boolean;
}

/** The plain lane's default in this process: on unless the environment says QUICPOOL_PLAIN_LANE=0. */
const plainLaneByDefault = (): boolean => process.env['QUICPOOL_PLAIN_LANE'] !== '0';

/** "plainLane on", or off and why: for `quicpool --version` and the daemon's banner, beside the transport's fast paths. */
export function plainLaneLine(): string {
  return plainLaneByDefault() ? 'plainLane on' : 'plainLane OFF (QUICPOOL_PLAIN_LANE=0)';
}

function makeCores(config: ResolvedPoolerConfig, clock: Clock, o: PoolerOptions): PoolerCore[] {
  const lane = o.plainLane ?? plainLaneByDefault();
  if (o.worker !== undefined) {
    if (o.workers !== undefined && o.workers !== 1) throw new RangeError('worker and workers exclude each other');
    return [new PoolerCore(config, clock, o.worker, lane)];
  }
  const count = o.workers ?? 1;
  if (count === 1) return [new PoolerCore(config, clock, null, lane)];
  const shared = SharedCounts.allocate(count) as SharedArrayBuffer;
  const groupId = randomUUID();
  const cores = Array.from({ length: count }, (_, index) => new PoolerCore(config, clock, { index, count, shared, groupId }, lane));
  // One set of listeners for all: an observer sees every core's events.
  for (const c of cores.slice(1)) c.events = cores[0]!.events;
  return cores;
}

export function createPooler(config: PoolerConfig, options: PoolerOptions = {}): Pooler {
  const cores = makeCores(resolvePoolerConfig(config), options.clock ?? realClock, options);
  const first = cores[0]!;
  const listeners = new Set<SessionListener>();
  let closing: Promise<void> | null = null;
  /** The graceful drain in progress: close({ graceful: false }) cuts it short. */
  let drain: { cut(): void } | null = null;
  /** Where each QUIC connection's sessions go (all to one core, as steering does), and how many are open. */
  const quicConnections = new Map<string, { core: PoolerCore; open: number }>();
  const leastBusy = (): PoolerCore => {
    let best = first;
    for (const c of cores) if (c.sessionCount < best.sessionCount) best = c;
    return best;
  };
  /** The core a new session goes to: the least busy, or the one its QUIC connection's sessions are on. */
  const coreFor = (stream: SessionStream): PoolerCore => {
    if (cores.length === 1) return first;
    const cid = stream.info.quic?.connectionId;
    if (cid === undefined) return leastBusy();
    let entry = quicConnections.get(cid);
    if (entry === undefined) quicConnections.set(cid, (entry = { core: leastBusy(), open: 0 }));
    entry.open++;
    const e = entry;
    stream.once('close', () => {
      if (--e.open === 0) quicConnections.delete(cid);
    });
    return e.core;
  };

  async function doClose(o: CloseOptions): Promise<void> {
    const graceful = o.graceful ?? true;
    for (const c of cores) c.stopAccepting();
    const listenersClosed = [...listeners].map((l) => l.close({ graceful: true }));
    for (const c of cores) c.shutdownClients(graceful);
    if (graceful) {
      for (const c of cores) c.closePools(false);
      const waits = cores.map((c) => c.clientsGone(o.deadlineMs ?? 30_000));
      drain = { cut: () => waits.forEach((w) => w.cut()) };
      await Promise.all(waits.map((w) => w.done));
      drain = null;
      for (const c of cores) c.shutdownClients(false);
    }
    for (const c of cores) c.closePools(true);
    await Promise.all(cores.map((c) => c.clientsGone(5_000).done));
    await Promise.all([...listenersClosed, ...cores.map((c) => c.settled())]);
    for (const c of cores) c.leaveGroup();
  }

  const view = (): PoolerView => (cores.length === 1 ? first.view() : mergeViews(cores.map((c) => c.view())));

  return {
    get config(): ResolvedPoolerConfig {
      return first.config;
    },
    events: first.events,
    view,
    pause: async (timeoutMs) => (await Promise.all(cores.map((c) => c.pause(timeoutMs)))).every(Boolean),
    resume: () => cores.forEach((c) => c.resume()),
    serveDatabase: (database, vdb) => cores.forEach((c) => c.addVirtualDatabase(database, vdb)),
    reconfigure(next: PoolerConfig): ResolvedPoolerConfig {
      const resolved = resolvePoolerConfig(next);
      for (const c of cores) c.config = resolved;
      return resolved;
    },
    listen(listener: SessionListener): void {
      if (closing !== null) throw new Error('pooler is closed');
      listeners.add(listener);
      listener.onHandshakeFailed?.((f) => {
        const local = listener.address();
        const info = { kind: listener.kind, localAddress: local.address, localPort: local.port, remoteAddress: f.remoteAddress, remotePort: f.remotePort, tls: null, quic: null };
        cores[0]?.emit({ type: 'handshakeFailed', info, reason: f.reason });
      });
      listener.onSession((stream) => {
        if (closing !== null) {
          stream.destroy();
          return;
        }
        const core = coreFor(stream);
        core.add(new ClientConnection(stream, core));
      });
    },
    close(o: CloseOptions = {}): Promise<void> {
      if (closing !== null && o.graceful === false) drain?.cut();
      closing ??= doClose(o);
      return closing;
    },
    stats(): PoolerStats {
      const v = view();
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
