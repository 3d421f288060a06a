import { defineProject } from 'vitest/config';

export default defineProject({
  resolve: { conditions: ['@quicpool/source'] },
  ssr: { resolve: { conditions: ['@quicpool/source'] } },
  test: {
    name: 'e2e',
    include: ['**/*.test.ts'],
    // Real processes and real Postgres on a 2-core machine: 5 s is too tight for them under load.
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
