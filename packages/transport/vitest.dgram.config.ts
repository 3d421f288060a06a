// The QUIC suite once more over node:dgram: the native UDP module is made unloadable (its path
// points at a file that is not a module), so every endpoint falls back as it would on a machine
// where the module could not be built.
import { fileURLToPath } from 'node:url';
import { defineProject } from 'vitest/config';

export default defineProject({
  resolve: { conditions: ['@quicpool/source'] },
  ssr: { resolve: { conditions: ['@quicpool/source'] } },
  test: {
    name: 'transport-dgram',
    include: ['test/quic-*.test.ts', 'test/hostile-streams.test.ts', 'test/**/*.dgram.test.ts'],
    // Socket groups are made by the native module: without it a pooler runs one worker (tested there).
    exclude: ['test/quic-workers.test.ts'],
    env: { QUICPOOL_UDP_NATIVE_PATH: fileURLToPath(new URL('./test/fixtures/not-a-module.node', import.meta.url)) },
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
