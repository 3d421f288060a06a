// Which worker of a daemon a pooler is. A daemon with several workers gives each the same shared
// buffer and group id and its own index; a pooler made without one is the only worker.

export interface PoolerWorker {
  /** 0 .. count-1. */
  readonly index: number;
  /** Workers of the daemon (1-256). */
  readonly count: number;
  /** `SharedCounts.allocate(count)`: the same buffer in every worker. */
  readonly shared: SharedArrayBuffer;
  /** Names the channel the workers of this daemon talk over (see peers.ts). */
  readonly groupId: string;
}
