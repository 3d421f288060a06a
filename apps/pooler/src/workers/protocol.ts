// What the main thread and a worker thread say to each other (see rpc.ts), and what a worker is
// started with. Everything here crosses a thread boundary: plain data only.
import type { ConfigRow, PoolerConfig, PoolerView, QuicListenerRow, WorkerRow } from '@quicpool/pooler';
import type { LogFormat } from '../logger.js';
import type { QuicServe } from '../serve/serving.js';

/** A worker's start: who it is, the sockets it adopts, and the configuration as it is now. */
export interface WorkerData {
  readonly index: number;
  readonly count: number;
  /** `SharedCounts.allocate(count)`: the daemon-wide counts. */
  readonly shared: SharedArrayBuffer;
  /** Names the workers' peer channel. */
  readonly groupId: string;
  readonly pooler: PoolerConfig;
  /** The worker's member of the TCP reuseport group (it listens on a dup of it). */
  readonly tcpFd: number;
  /** Its member of the UDP group, or null when this worker serves no QUIC. */
  readonly udpFd: number | null;
  /** QUIC settings (null: QUIC is off). With a UDP member, connection ids name worker index of `quicWorkers`. */
  readonly quic: QuicServe | null;
  /** Workers the UDP port's steering program spreads datagrams over (1: QUIC in worker 0 only). */
  readonly quicWorkers: number;
  readonly adminDatabase: string;
  readonly adminUsers: readonly string[];
  readonly log: { readonly level: string; readonly format: LogFormat };
}

/** What a worker tells the main thread about itself. */
export interface WorkerStats {
  readonly thread: number;
  readonly clients: number;
  readonly servers: number;
  readonly cpuMs: number | null;
  readonly cancelRequests: number;
  readonly cancelsForwarded: number;
}

/** Settings a RELOAD changes beside the pooler's own configuration. */
export interface LiveSettings {
  readonly logLevel: string;
  readonly adminUsers: readonly string[];
}

/** A prom-client metric as `Registry#getMetricsAsJSON` gives it (aggregated in the main thread). */
export type MetricJson = Record<string, unknown>;

/** Served by each worker, called by the main thread. */
export interface WorkerOps {
  view(): PoolerView;
  quic(): QuicListenerRow[];
  metrics(): MetricJson[];
  stats(): WorkerStats;
  pause(timeoutMs: number): boolean;
  resume(): void;
  /** Applies a reloaded configuration (the main thread checked it first). */
  reconfigure(pooler: PoolerConfig, live: LiveSettings): void;
  /** Drains (or, not graceful, closes at once) and then ends the thread. */
  close(graceful: boolean, deadlineMs: number): void;
  /** KILL WORKER: fails as an uncaught error would (after answering). */
  crash(reason: string): void;
}

/** Served by the main thread, called by the workers (their admin console answers for the whole daemon). */
export interface MainOps {
  ready(ports: { tcp: number; quic: number | null }): void;
  view(): PoolerView;
  quic(): readonly QuicListenerRow[];
  workers(): readonly WorkerRow[];
  pause(): boolean;
  resume(): void;
  config(): readonly ConfigRow[];
  reload(): string;
  shutdown(): void;
  killWorker(worker: number): string;
}
