import { defineProject } from 'vitest/config';

export default defineProject({
  resolve: { conditions: ['@quicpool/source'] },
  ssr: { resolve: { conditions: ['@quicpool/source'] } },
  test: {
    name: 'pooler',
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // Real-Postgres tests (200 sessions, pgbench) run in parallel files; 5 s is too tight for them.
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
