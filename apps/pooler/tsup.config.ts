import { defineConfig } from 'tsup';

// The daemon is a program, not a library: one executable bundle. The test fixture's Postgres
// launcher is private tooling, so it is bundled in rather than depended on at run time.
export default defineConfig({
  entry: ['src/cli.ts'],
  format: ['esm'],
  target: 'node20',
  dts: false,
  sourcemap: true,
  clean: true,
  noExternal: ['@quicpool/pg-fixture'],
  banner: { js: '#!/usr/bin/env node' },
});
