// The daemon's suite once more with two worker threads (test/daemon.ts passes workers.count).
// The same files use the same state folders, ports found free and database names as in the
// `quicpool` project, so this project runs after every other one (groupOrder), never beside its
// one-worker twin.
import { defineProject } from 'vitest/config';

export default defineProject({
  resolve: { conditions: ['@quicpool/source'] },
  ssr: { resolve: { conditions: ['@quicpool/source'] } },
  test: {
    name: 'quicpool-workers2',
    include: ['test/**/*.test.ts'],
    // These start daemons with the worker counts they are about.
    exclude: ['test/workers*.test.ts'],
    env: { QUICPOOL_TEST_WORKERS: '2' },
    sequence: { groupOrder: 1 },
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
