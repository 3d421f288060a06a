import { defineConfig } from 'tsup';

// Every file in src/bin is one benchmark program (dist/bin/<name>.js); the rest is shared code.
export default defineConfig({
  entry: ['src/bin/*.ts'],
  outDir: 'dist/bin',
  format: ['esm'],
  target: 'node20',
  dts: false,
  sourcemap: true,
  clean: true,
});
