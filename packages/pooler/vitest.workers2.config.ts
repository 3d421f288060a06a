// The pooler's integration suite once more with two workers: two pooler cores in each test's
// pooler, sharing the daemon-wide limits and server budget through the same shared counts and
// peer channel a daemon's worker threads use (test/support/create-pooler.ts). Unit tests beside
// the code test one core and run once, in the `pooler` project. The same files use the same
// table, database and role names as in the `pooler` project, so this project runs after every
// other one (groupOrder), never beside its one-worker twin.
import { defineProject } from 'vitest/config';

export default defineProject({
  resolve: { conditions: ['@quicpool/source'] },
  ssr: { resolve: { conditions: ['@quicpool/source'] } },
  test: {
    name: 'pooler-workers2',
    include: ['test/**/*.test.ts'],
    // These make their two workers themselves (and run in the `pooler` project). The failover runs
    // once: what it checks is per pool (each worker's pools find the new primary by themselves),
    // and a restart with two workers is covered here (faults/outage-wait) and by the daemon's
    // apps/pooler/test/upstream.test.ts in `quicpool-workers2`.
    exclude: ['test/workers/**', 'test/faults/failover.test.ts'],
    env: { QUICPOOL_TEST_WORKERS: '2' },
    sequence: { groupOrder: 1 },
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
