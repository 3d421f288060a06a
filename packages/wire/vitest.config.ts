import { defineProject } from 'vitest/config';

export default defineProject({
  resolve: { conditions: ['@quicpool/source'] },
  ssr: { resolve: { conditions: ['@quicpool/source'] } },
  test: {
    name: 'wire',
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // Property tests run thousands of cases; on a shared 2-core machine that can exceed the 5 s default.
    testTimeout: 60_000,
  },
});
