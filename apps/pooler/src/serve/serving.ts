// The pooler as the daemon runs it, whichever way: in the main thread (one worker) or as worker
// threads (workers/supervisor.ts). The daemon (config, signals, banner, metrics endpoint) talks
// to it only through this.
import type { ConfigRow, PoolerConfig, PoolerView, QuicListenerRow, WorkerRow } from '@quicpool/pooler';
import type { LogFormat } from '../logger.js';
import type { LiveSettings } from '../workers/protocol.js';

/** The QUIC listener's settings (plain data: workers get them too). */
export interface QuicServe {
  readonly port: number;
  readonly cert: string;
  readonly key: string;
  readonly alpn: readonly string[];
  readonly idleTimeoutMs: number;
  readonly maxStreamsPerConnection: number;
  readonly maxConnections: number;
  readonly earlyData: 'accept' | 'defer';
  readonly ticketKey: Uint8Array;
  readonly retryKey: Uint8Array;
  readonly statelessResetKey: Uint8Array;
  readonly clientCa?: string;
}

export interface ServeOptions {
  readonly pooler: PoolerConfig;
  readonly host: string;
  readonly tcpPort: number;
  /** null: listen.quic is off. */
  readonly quic: QuicServe | null;
  readonly adminDatabase: string;
  readonly adminUsers: readonly string[];
  readonly log: { readonly level: string; readonly format: LogFormat };
}

/** What the admin console may ask of the daemon beyond the pooler (answered in the main thread). */
export interface DaemonHooks {
  config(): ConfigRow[];
  reload(): Promise<string>;
  shutdown(): void;
  /** admin.pause_timeout_ms as it is now. */
  pauseTimeoutMs(): number;
}

/** How the workers share the ports (the banner, the ready log line and SHOW WORKERS say it). */
export interface WorkerLayout {
  readonly count: number;
  /** How QUIC datagrams reach their worker. */
  readonly quic: 'steered by connection id (BPF)' | 'in worker 0' | 'off';
  /** Why the layout is not what was configured, if it is not. */
  readonly note: string | null;
}

export interface Serving {
  readonly tcpPort: number;
  readonly quicPort: number | undefined;
  readonly layout: WorkerLayout;
  view(): Promise<PoolerView>;
  quic(): Promise<QuicListenerRow[]>;
  workers(): Promise<WorkerRow[]>;
  pause(timeoutMs: number): Promise<boolean>;
  resume(): Promise<void>;
  killWorker(worker: number): Promise<string>;
  /** Applies a reloaded configuration; throws (ConfigError) and applies nothing when invalid. */
  reconfigure(pooler: PoolerConfig, live: LiveSettings): Promise<void>;
  /** The Prometheus exposition for the whole daemon. */
  metrics(): Promise<{ contentType: string; body: string }>;
  /** Drains (graceful) or closes at once; a second, not graceful call cuts a drain short. */
  close(graceful: boolean, deadlineMs: number): Promise<void>;
}
