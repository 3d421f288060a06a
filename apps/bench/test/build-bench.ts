// Tests run from src/, but each variant's client process (and the relay, and bench:lan's
// forwarders) run the bench program's built file. This builds src/bin/quicpool-bench.ts (and the
// chunks of its subcommands) once (tsup, ~1 s) into apps/bench/node_modules/.cache/ (so their
// imports of @quicpool/* and pg resolve as from dist/).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const benchRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export function buildBenchScript(): { script: string; remove: () => void } {
  const cache = join(benchRoot, 'node_modules', '.cache');
  mkdirSync(cache, { recursive: true });
  const out = mkdtempSync(join(cache, 'bench-test-'));
  const tsup = resolve(benchRoot, '../../node_modules/.bin/tsup');
  execFileSync(tsup, ['src/bin/quicpool-bench.ts', '--out-dir', out, '--no-config', '--format', 'esm', '--target', 'node20', '--splitting', '--silent'], { cwd: benchRoot, stdio: 'pipe' });
  return { script: join(out, 'quicpool-bench.js'), remove: () => rmSync(out, { recursive: true, force: true }) };
}
