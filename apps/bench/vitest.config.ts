import { defineProject } from 'vitest/config';

export default defineProject({
  resolve: { conditions: ['@quicpool/source'] },
  ssr: { resolve: { conditions: ['@quicpool/source'] } },
  test: {
    name: 'bench',
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // Real processes and real Postgres on a 2-core machine: 5 s is too tight for them under load.
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Alone, one file at a time, after every other project: these files build network namespaces and
    // TUN devices (two at once would see each other's), give the forwarder real-time priority and
    // measure the machine's capacity, none of which may share two cores with other tests.
    // (Group 2: after the two-worker projects of group 1 as well.)
    maxWorkers: 1,
    sequence: { groupOrder: 2 },
  },
});
