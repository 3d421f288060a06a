import { defineConfig } from 'vitest/config';

// One vitest run covers every package (vitest 4 reads `test.projects`, not vitest.workspace.ts).
// The real-Postgres fixture starts once for the whole run in its global setup and is always stopped.
export default defineConfig({
  test: {
    // transport-dgram: the QUIC suite again with the native UDP module unloadable (node:dgram path).
    projects: ['packages/*', 'packages/transport/vitest.dgram.config.ts', 'apps/*', 'tooling/pg-fixture', 'tooling/release-test', 'tooling/architecture', 'e2e'],
    globalSetup: ['./tooling/pg-fixture/src/global-setup.ts'],
    reporters: process.env.CI ? ['default'] : ['default'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
