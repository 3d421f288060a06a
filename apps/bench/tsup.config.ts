import { defineConfig } from 'tsup';

// One program, dist/bin/quicpool-bench.js; each subcommand is a chunk beside it, loaded when chosen.
export default defineConfig({
  entry: ['src/bin/quicpool-bench.ts'],
  outDir: 'dist/bin',
  format: ['esm'],
  target: 'node20',
  splitting: true,
  dts: false,
  sourcemap: true,
  clean: true,
});
