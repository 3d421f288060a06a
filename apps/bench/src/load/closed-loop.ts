// A closed loop: K workers each issue the next query as soon as the previous one returns. Used only
// to find the machine's capacity (the highest rate it sustains), never to measure latency under
// load, where a closed loop would hide overload by slowing down with the system.
import type { LoadRecorder } from '../telemetry/recorder.js';
import type { Clock } from './clock.js';
import { realClock } from './clock.js';
import type { ClientVariant } from './variant.js';
import { WORKLOAD_SQL, failureReasonOf } from './variant.js';

export interface ClosedLoopOptions {
  variant: ClientVariant;
  recorder: LoadRecorder;
  workers: number;
  durationMs: number;
  /** Safety bound on queries per worker. Default 10 000 000. */
  maxQueriesPerWorker?: number;
  timeoutMs?: number;
  sql?: string;
  clock?: Clock;
}

export async function runClosedLoop(options: ClosedLoopOptions): Promise<{ completed: number; failed: number; elapsedMs: number }> {
  const clock = options.clock ?? realClock;
  const sql = options.sql ?? WORKLOAD_SQL;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const maxQueries = options.maxQueriesPerWorker ?? 10_000_000;
  const start = clock.now();
  const end = start + options.durationMs;
  let completed = 0;
  let failed = 0;
  const worker = async (): Promise<void> => {
    for (let n = 0; n < maxQueries && clock.now() < end; n++) {
      const t0 = clock.now();
      options.recorder.issued();
      try {
        await options.variant.query(sql, t0 + timeoutMs);
        options.recorder.completed((clock.now() - t0) * 1000);
        completed += 1;
      } catch (error) {
        options.recorder.failed(failureReasonOf(error), error);
        failed += 1;
      }
    }
  };
  await Promise.all(Array.from({ length: options.workers }, worker));
  return { completed, failed, elapsedMs: clock.now() - start };
}
