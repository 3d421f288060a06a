import { defineProject } from 'vitest/config';

export default defineProject({
  resolve: { conditions: ['@quicpool/source'] },
  ssr: { resolve: { conditions: ['@quicpool/source'] } },
  test: {
    name: 'architecture',
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
  },
});
