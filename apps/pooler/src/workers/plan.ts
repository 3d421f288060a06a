// How many workers the daemon runs: workers.count, 0 meaning one per core. Sharing a port between
// workers needs the native module (SO_REUSEPORT groups and the QUIC steering program: Node 20 has
// neither); without it the daemon runs one worker and says why.
import { availableParallelism } from 'node:os';
import { MAX_WORKERS } from '@quicpool/pooler';
import { socketGroupSupport } from '@quicpool/udp';

export interface WorkerPlan {
  readonly count: number;
  /** Why `count` is not what was configured, if it is not. */
  readonly note: string | null;
}

/** `configured` is workers.count (checked: 0-256). */
export function planWorkers(configured: number, support = socketGroupSupport()): WorkerPlan {
  const wanted = configured === 0 ? Math.min(availableParallelism(), MAX_WORKERS) : configured;
  if (wanted === 1) return { count: 1, note: null };
  if (!support.available) return { count: 1, note: `one worker instead of ${wanted}: sharing the ports between workers needs the native UDP module, which is unavailable (${support.reason})` };
  return { count: wanted, note: null };
}
