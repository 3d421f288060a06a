import { defineProject } from 'vitest/config';

export default defineProject({
  resolve: { conditions: ['@quicpool/source'] },
  ssr: { resolve: { conditions: ['@quicpool/source'] } },
  test: {
    name: 'postgres',
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 120_000,
  },
});
