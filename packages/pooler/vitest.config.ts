import { defineProject } from 'vitest/config';

export default defineProject({
  resolve: { conditions: ['@quicpool/source'] },
  ssr: { resolve: { conditions: ['@quicpool/source'] } },
  test: {
    name: 'pooler',
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
  },
});
