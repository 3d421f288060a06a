// A closed loop: K workers each issue the next query as soon as the previous one returns. Used only
// to find the machine's capacity (the highest rate it sustains), never to measure latency under
// load, where a closed loop would hide overload by slowing down with the system.
import type { LoadRecorder } from '../telemetry/recorder.js';
import { realClock as clock } from './clock.js';
import type { ClientVariant } from './variant.js';
import { WORKLOAD_SQL, failureReasonOf } from './variant.js';

/** Safety bound on the queries of one worker. */
const MAX_QUERIES_PER_WORKER = 10_000_000;

type ClosedLoopOptions = { variant: ClientVariant; recorder: LoadRecorder; workers: number; durationMs: number; timeoutMs: number };

export async function runClosedLoop(options: ClosedLoopOptions): Promise<void> {
  const end = clock.now() + options.durationMs;
  const worker = async (): Promise<void> => {
    for (let n = 0; n < MAX_QUERIES_PER_WORKER && clock.now() < end; n++) {
      const t0 = clock.now();
      options.recorder.issued();
      try {
        await options.variant.query(WORKLOAD_SQL, t0 + options.timeoutMs);
        options.recorder.completed((clock.now() - t0) * 1000);
      } catch (error) {
        options.recorder.failed(failureReasonOf(error), error);
      }
    }
  };
  await Promise.all(Array.from({ length: options.workers }, worker));
}
