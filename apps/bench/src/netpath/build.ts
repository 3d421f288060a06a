// Compiles the packet forwarder (forwarder.c, libc only) with the machine's `cc` at first use, into a
// cache folder named by a hash of the source and flags (README.md, "Build"): no compiler needed where
// the bench is merely installed, no prebuilt binary to keep in step. The source is found from the
// package folder, which holds src/ (vitest), dist/bin/ (tsup) and the bench's private copy alike.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { jsonLine } from '../process/worker-process.js';

const PACKAGE_NAME = '@quicpool/bench';
const SOURCE_IN_PACKAGE = join('src', 'netpath', 'forwarder.c');
const CC_FLAGS: readonly string[] = ['-O2', '-Wall', '-Wextra', '-Werror'];

/** The name in `dir`'s package.json; undefined when it has none (or it is not JSON): keep walking up. */
function packageNameAt(dir: string): unknown {
  const file = join(dir, 'package.json');
  return existsSync(file) ? jsonLine(readFileSync(file, 'utf8'))?.name : undefined;
}

/** Where forwarder.c is, or null when the package folder (or the file in it) cannot be found. */
export function forwarderSourcePath(from: string = fileURLToPath(import.meta.url)): string | null {
  for (let dir = dirname(from); ; dir = dirname(dir)) {
    if (packageNameAt(dir) === PACKAGE_NAME) {
      const source = join(dir, SOURCE_IN_PACKAGE);
      return existsSync(source) ? source : null;
    }
    if (dirname(dir) === dir) return null;
  }
}

/** Why the forwarder cannot be built here, or null (cheap checks: the source and a `cc`). */
export function forwarderBuildUnavailableReason(): string | null {
  if (forwarderSourcePath() === null) return `forwarder.c not found (looked for ${SOURCE_IN_PACKAGE} in the ${PACKAGE_NAME} package folder)`;
  try {
    execFileSync('cc', ['--version'], { stdio: 'ignore' });
  } catch {
    return 'no C compiler (`cc`) to build the packet forwarder (apt-get install gcc)';
  }
  return null;
}

/** A cache folder only we can write to: the binary runs as root, so one someone else made in /tmp is not trusted. */
function privateCacheDir(dir: string): string {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const st = lstatSync(dir);
  const uid = typeof process.getuid === 'function' ? process.getuid() : st.uid;
  if (!st.isDirectory() || st.uid !== uid || (st.mode & 0o022) !== 0) {
    throw new Error(`${dir} is not a private folder of this user (owner ${st.uid}, mode ${(st.mode & 0o777).toString(8)}): remove it`);
  }
  return dir;
}

/** The compiled forwarder's path; compiles it first when this source version has no binary yet. */
export function ensureForwarderBinary(): string {
  const source = forwarderSourcePath();
  if (source === null) throw new Error(forwarderBuildUnavailableReason() ?? 'forwarder.c not found');
  const text = readFileSync(source);
  const hash = createHash('sha256').update(text).update(CC_FLAGS.join(' ')).digest('hex').slice(0, 16);
  const dir = privateCacheDir(join(tmpdir(), `quicpool-netpath-${hash}`));
  const binary = join(dir, 'forwarder');
  if (existsSync(binary)) return binary;
  process.stderr.write(`building the packet forwarder with cc ${CC_FLAGS.join(' ')} (${source} -> ${binary})\n`);
  // Compile next to the final name and rename: a concurrent build or a crash mid-way never leaves
  // a half-written binary under the name that is reused.
  const partial = `${binary}.${process.pid}.tmp`;
  try {
    execFileSync('cc', [...CC_FLAGS, '-o', partial, source], { stdio: ['ignore', 'inherit', 'inherit'] });
    renameSync(partial, binary);
  } catch (error) {
    rmSync(partial, { force: true });
    throw new Error(`could not build the packet forwarder: ${error instanceof Error ? error.message : String(error)}`);
  }
  return binary;
}
