// The pooler as the integration tests make it: with the workers of this test run. The `pooler`
// project runs the suite with one (the default), `pooler-workers2` with two pooler cores that
// share the daemon-wide limits and server budget as a daemon's worker threads do
// (QUICPOOL_TEST_WORKERS=2, see vitest.workers2.config.ts).
import { createPooler as create } from '../../src/index.js';
import type { Pooler, PoolerConfig, PoolerOptions } from '../../src/index.js';

export const testWorkers = Number(process.env.QUICPOOL_TEST_WORKERS ?? '1');

export function createPooler(config: PoolerConfig, options: PoolerOptions = {}): Pooler {
  return create(config, { workers: testWorkers, ...options });
}
