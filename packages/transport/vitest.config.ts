import { defineProject } from 'vitest/config';

export default defineProject({
  resolve: { conditions: ['@quicpool/source'] },
  ssr: { resolve: { conditions: ['@quicpool/source'] } },
  test: {
    name: 'transport',
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // Tests of the node:dgram fallback only: they run in the transport-dgram project.
    exclude: ['test/**/*.dgram.test.ts'],
    // Real processes and real Postgres on a 2-core machine: 5 s is too tight for them under load.
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
