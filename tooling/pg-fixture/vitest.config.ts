import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: 'pg-fixture',
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
  },
});
