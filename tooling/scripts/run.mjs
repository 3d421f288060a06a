#!/usr/bin/env node
// The Quick start commands land here: `npm run quicpool <command>` (also `pnpm quicpool`),
// `npm start` (= `quicpool start`) and `npm test`, and so do the development commands of the
// root package.json (`npm run build`, `npm run bench:wire`, `npm run pnpm -- <args>` ...). A fresh
// clone has only Node and npm, so this script brings everything else by itself: the pinned pnpm
// (into .tooling/, no global install; turbo needs it on PATH), the dependencies (frozen lockfile
// under CI) and the build, and then runs the job.
// `quicpool`/`start` install and build only when something changed since the last time (mtimes of
// the lockfile, the package.json files and the build inputs), so a second start spawns no pnpm;
// `test` always installs, builds and type-checks (turbo's cache makes that cheap when unchanged).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { constants } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const PNPM_VERSION = '12.4.2';
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const localBin = join(root, '.tooling', 'pnpm', 'node_modules', '.bin');
/** The daemon's package: what `quicpool` runs needs it and its workspace dependencies built. */
const APP_DIR = join(root, 'apps', 'pooler');
const CLI = join(APP_DIR, 'dist', 'cli.js');
// The `quicpool` command as npm installs it: dist/cli.js under the daemon's V8 settings.
const CLI_BIN = join(APP_DIR, 'bin', 'quicpool');

const env = {
  ...process.env,
  TURBO_TELEMETRY_DISABLED: '1',
  DO_NOT_TRACK: '1',
  NPM_CONFIG_UPDATE_NOTIFIER: 'false',
};
if (process.env.CI) env.NO_COLOR = '1';

function run(cmd, args, { allowFail = false } = {}) {
  const r = spawnSync(cmd, args, { cwd: root, env, stdio: 'inherit' });
  if (r.error) throw r.error;
  if (r.status !== 0 && !allowFail) {
    console.error(`\n[quicpool] \`${cmd} ${args.join(' ')}\` failed (exit ${r.status ?? r.signal}).`);
    process.exit(r.status ?? 1);
  }
  return r.status ?? 1;
}

function pnpmVersionOnPath() {
  const r = spawnSync('pnpm', ['--version'], { cwd: root, env, encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : null;
}

let pnpmReady = false;

/** Runs the pinned pnpm, bootstrapping it first (once) when it is not there. */
function pnpm(args, options) {
  if (!pnpmReady) ensurePnpm();
  pnpmReady = true;
  return run('pnpm', args, options);
}

function ensurePnpm() {
  // Under `pnpm <script>` pnpm itself is running: it is the pinned one (pnpm refuses a mismatch).
  if ((process.env.npm_config_user_agent ?? '').startsWith(`pnpm/${PNPM_VERSION} `)) return;
  if (pnpmVersionOnPath() === PNPM_VERSION) return;
  if (!existsSync(join(localBin, 'pnpm'))) {
    console.log(`[quicpool] installing pnpm@${PNPM_VERSION} into .tooling/pnpm`);
    run('npm', ['install', '--prefix', join(root, '.tooling', 'pnpm'), '--no-save', '--no-audit',
      '--no-fund', '--loglevel=error', '-E', `pnpm@${PNPM_VERSION}`]);
  }
  env.PATH = `${localBin}:${env.PATH ?? ''}`;
  const v = pnpmVersionOnPath();
  if (v !== PNPM_VERSION) {
    console.error(`[quicpool] expected pnpm ${PNPM_VERSION} on PATH, found ${v ?? 'none'}`);
    process.exit(1);
  }
}

const mtime = (path) => {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return -1;
  }
};

/** Newest mtime under `dir` (files only; node_modules, dist and .turbo skipped); -1 when empty or missing. */
function newestIn(dir) {
  let newest = -1;
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return -1;
  }
  for (const e of entries) {
    if (e.name === 'node_modules' || e.name === 'dist' || e.name === '.turbo') continue;
    const p = join(dir, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestIn(p) : mtime(p));
  }
  return newest;
}

/** Workspace packages (name -> folder), from the globs of pnpm-workspace.yaml (`folder/*` only). */
function workspacePackages() {
  const byName = new Map();
  const yaml = readFileSync(join(root, 'pnpm-workspace.yaml'), 'utf8');
  for (const m of yaml.matchAll(/^\s*-\s*['"]?([\w.-]+)\/\*['"]?\s*$/gm)) {
    const parent = join(root, m[1]);
    if (!existsSync(parent)) continue;
    for (const e of readdirSync(parent, { withFileTypes: true })) {
      const dir = join(parent, e.name);
      if (!e.isDirectory() || !existsSync(join(dir, 'package.json'))) continue;
      byName.set(JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).name, dir);
    }
  }
  return byName;
}

/** Written after each install of ours: pnpm leaves node_modules untouched when it is up to date. */
const INSTALL_STAMP = join(root, 'node_modules', '.quicpool-installed');

/** Runs `pnpm install` when there are no node_modules or a manifest or the lockfile is newer than them. */
function installIfNeeded(packages) {
  const installed = Math.max(mtime(join(root, 'node_modules', '.modules.yaml')), mtime(INSTALL_STAMP));
  const manifests = [join(root, 'package.json'), join(root, 'pnpm-lock.yaml'), join(root, 'pnpm-workspace.yaml'),
    ...[...packages.values()].map((d) => join(d, 'package.json'))];
  const stale = installed < 0 || manifests.some((f) => mtime(f) > installed) || !existsSync(join(APP_DIR, 'node_modules'));
  if (stale) install();
}

function install() {
  pnpm(['install', ...(process.env.CI ? ['--frozen-lockfile'] : [])]);
  writeFileSync(INSTALL_STAMP, `${new Date().toISOString()}\n`);
}

/** The app and every workspace package it depends on (directly or not). */
function closureOf(dir, packages, seen = new Set()) {
  if (seen.has(dir)) return seen;
  seen.add(dir);
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  for (const deps of [pkg.dependencies, pkg.devDependencies]) {
    for (const [name, range] of Object.entries(deps ?? {})) {
      const d = packages.get(name);
      if (d !== undefined && String(range).startsWith('workspace:')) closureOf(d, packages, seen);
    }
  }
  return seen;
}

/** Builds the daemon (turbo, cached) when a package it needs has no dist/ or a build input newer than it. */
function buildIfNeeded(packages) {
  const stale = [...closureOf(APP_DIR, packages)].some((dir) => {
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    if (pkg.scripts?.build === undefined) return false;
    // Oldest output of the last build (tsup rewrites all of dist/ each time) vs newest input (turbo.json's).
    const built = existsSync(join(dir, 'dist')) ? oldestIn(join(dir, 'dist')) : -1;
    const inputs = Math.max(newestIn(join(dir, 'src')), ...['tsup.config.ts', 'tsconfig.json', 'package.json'].map((f) => mtime(join(dir, f))));
    return built < 0 || inputs > built;
  });
  if (stale || !existsSync(CLI)) {
    pnpm(['exec', 'turbo', 'run', 'build', '--filter=quicpool...', '--output-logs=errors-only']);
  }
}

function oldestIn(dir) {
  let oldest = Infinity;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    oldest = Math.min(oldest, e.isDirectory() ? oldestIn(p) : mtime(p));
  }
  return oldest === Infinity ? -1 : oldest;
}

/**
 * Runs the CLI as a child and becomes its shadow: SIGINT/SIGTERM/SIGHUP are passed on (the daemon
 * drains on the first and stops at once on a second; a Ctrl-C that reaches it twice within
 * milliseconds, from the terminal and from us, counts once), and our exit code is the CLI's.
 */
function runCli(args) {
  // bin/quicpool runs the `node` on PATH: make that the node running us.
  const path = [dirname(process.execPath), process.env.PATH ?? ''].join(delimiter);
  shadow(CLI_BIN, args, { ...process.env, PATH: path });
}

/** Runs `cmd` as a child we shadow (signals passed on, its exit code ours; see runCli). */
function shadow(cmd, args, childEnv) {
  const child = spawn(cmd, args, { cwd: process.cwd(), env: childEnv, stdio: 'inherit' });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(signal, () => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    });
  }
  // `npm run` puts a shell between npm and us; a SIGTERM sent to npm alone ends npm and that shell
  // but reaches neither us nor the CLI. Once our parent is gone, drain and stop the CLI as SIGTERM would.
  const parent = process.ppid;
  const orphanCheck = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(orphanCheck);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  }, 500);
  orphanCheck.unref();
  child.on('error', (e) => {
    console.error(`[quicpool] could not run ${args[0] ?? cmd}: ${e.message}`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => process.exit(code ?? 128 + (constants.signals[signal] ?? 0)));
}

/** The packages a release publishes (every workspace package that is not private), name -> folder. */
function publishedPackages() {
  const out = new Map();
  for (const [name, dir] of workspacePackages()) {
    if (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).private !== true) out.set(name, dir);
  }
  return out;
}

const PREBUILD_DIR = join(root, 'packages', 'udp', 'prebuilds', `${process.platform}-${process.arch}`);

/**
 * `npm run release:prepare` (= `release prepare`): install, build and type-check everything, then
 * the native module's prebuilt binary (`release prebuild`). `npm run release:publish -- [pnpm
 * publish options]` (= `release publish`): checks that every published package is built and the
 * prebuilt binary is there, then `pnpm publish -r` (pnpm rewrites `workspace:` ranges to versions
 * and skips versions the registry already has). docs/releasing.md has the whole flow.
 */
function release([step, ...args]) {
  switch (step) {
    case 'prepare':
      install();
      pnpm(['exec', 'turbo', 'run', 'build', 'typecheck', '--output-logs=errors-only']);
      release(['prebuild']);
      return;
    case 'prebuild':
      // Compiles in a temp copy (packages/udp/scripts/native.mjs): build/Release stays as it is.
      pnpm(['--filter', '@quicpool/udp', 'prebuildify']);
      return;
    case 'publish': {
      const missing = [];
      for (const [name, dir] of publishedPackages()) {
        if (!existsSync(join(dir, 'dist'))) missing.push(`${name}: no dist/ (build it)`);
      }
      if (!existsSync(PREBUILD_DIR) || !readdirSync(PREBUILD_DIR).some((f) => f.endsWith('.node'))) {
        missing.push(`@quicpool/udp: no prebuilt binary in ${PREBUILD_DIR.slice(root.length + 1)}`);
      }
      if (missing.length > 0) {
        console.error(`[quicpool] not ready to publish (run \`npm run release:prepare\` first):\n  ${missing.join('\n  ')}`);
        process.exit(1);
      }
      process.exit(pnpm(['publish', '-r', '--access', 'public', ...args], { allowFail: true }));
      return;
    }
    default:
      console.error('usage: node tooling/scripts/run.mjs release <prepare|prebuild|publish> [pnpm publish options]');
      process.exit(2);
  }
}

const [job, ...rest] = process.argv.slice(2);
switch (job) {
  case 'test':
    install();
    pnpm(['exec', 'turbo', 'run', 'build', 'typecheck', '--output-logs=errors-only']);
    process.exit(pnpm(['exec', 'vitest', 'run', ...rest], { allowFail: true }));
    break;
  case 'start':
  case 'quicpool': {
    // pnpm is fetched, and run, only when something needs installing or building.
    const packages = workspacePackages();
    installIfNeeded(packages);
    buildIfNeeded(packages);
    runCli(job === 'start' ? ['start', ...rest] : rest);
    break;
  }
  case 'pnpm':
    // `npm run pnpm -- <args>`: the pinned pnpm, for every command the docs write as `pnpm ...`.
    installIfNeeded(workspacePackages());
    if (!pnpmReady) ensurePnpm();
    shadow('pnpm', rest, env);
    break;
  case 'turbo':
    // `npm run build` / `npm run typecheck`: turbo runs each package's script with pnpm.
    installIfNeeded(workspacePackages());
    process.exit(pnpm(['exec', 'turbo', ...rest], { allowFail: true }));
    break;
  case 'bench': {
    // `npm run bench:wire -- --json` etc.: build the harness (turbo, cached), then run its one
    // program, `quicpool-bench <subcommand> [args]` (it answers an unknown subcommand itself).
    const [name = 'bench', ...args] = rest;
    const bin = join(root, 'apps', 'bench', 'dist', 'bin', 'quicpool-bench.js');
    installIfNeeded(workspacePackages());
    pnpm(['exec', 'turbo', 'run', 'build', '--filter=@quicpool/bench...', '--output-logs=errors-only']);
    if (!existsSync(bin)) {
      console.error(`[quicpool] the benchmark program is missing (expected ${bin})`);
      process.exit(2);
    }
    shadow(process.execPath, [bin, name, ...args], env);
    break;
  }
  case 'release':
    release(rest);
    break;
  default:
    console.error('usage: node tooling/scripts/run.mjs <quicpool|start|test|pnpm|turbo|bench|release> [args...]');
    process.exit(2);
}
