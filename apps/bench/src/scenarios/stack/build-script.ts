// Tests run from src/, but the pooler, the WAN emulator and each variant's load generator run as
// workers of the bench program's built file. This builds src/bin/bench.ts once (tsup, <1 s) into
// apps/bench/node_modules/.cache/ (so its imports of @quicpool/* and pg resolve as in dist/).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const benchRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

export function buildBenchScript(): { script: string; remove: () => void } {
  const cache = join(benchRoot, 'node_modules', '.cache');
  mkdirSync(cache, { recursive: true });
  const out = mkdtempSync(join(cache, 'bench-test-'));
  const tsup = resolve(benchRoot, '../../node_modules/.bin/tsup');
  execFileSync(tsup, ['src/bin/bench.ts', '--out-dir', out, '--no-config', '--format', 'esm', '--target', 'node20', '--silent'], { cwd: benchRoot, stdio: 'pipe' });
  return { script: join(out, 'bench.js'), remove: () => rmSync(out, { recursive: true, force: true }) };
}
