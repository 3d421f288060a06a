// The generator's only access to time, so tests can drive it with a fake clock.
import { performance } from 'node:perf_hooks';

export interface Clock {
  /** Monotonic milliseconds. */
  now(): number;
  sleep(ms: number): Promise<void>;
}

export const realClock: Clock = {
  now: () => performance.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms))),
};
