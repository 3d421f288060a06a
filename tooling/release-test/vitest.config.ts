import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: 'release',
    include: ['test/**/*.test.ts'],
    // One test that publishes, installs with npm, starts a daemon and queries: every step inside
    // has its own deadline; this is the outer bound.
    testTimeout: 240_000,
    hookTimeout: 60_000,
  },
});
