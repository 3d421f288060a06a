import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

// One vitest run covers every package (vitest 4 reads `test.projects`, not vitest.workspace.ts).
// The real-Postgres fixture starts once for the whole run in its global setup and is always stopped.
export default defineConfig({
  test: {
    // transport-dgram: the QUIC suite again with the native UDP module unloadable (node:dgram path).
    projects: ['packages/*', 'packages/transport/vitest.dgram.config.ts', 'packages/pooler/vitest.workers2.config.ts', 'apps/*', 'apps/pooler/vitest.workers2.config.ts', 'tooling/pg-fixture', 'tooling/release-test', 'tooling/architecture', 'e2e'],
    globalSetup: ['./tooling/pg-fixture/src/global-setup.ts'],
    reporters: process.env.CI ? ['default'] : ['default'],
    // Most files wait on sockets, Postgres and child processes, not on this process's CPU: three files
    // at a time even on a 2-core machine (vitest's default there is one; on 2026-12-05 the whole run
    // took 393 s with three, 442 s with two). Files share the one Postgres but never its roles,
    // tables or settings (each creates its own), so they may overlap.
    maxWorkers: Math.max(3, availableParallelism() - 1),
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
