#!/usr/bin/env node
// The two Quick start commands (`npm start`, `npm test`) land here. A fresh clone has only Node and
// npm, so this script brings everything else by itself: the pinned pnpm (into .tooling/, no global
// install), the dependencies (frozen lockfile under CI), the build, and then the job itself.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const PNPM_VERSION = '12.4.2';
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const localBin = join(root, '.tooling', 'pnpm', 'node_modules', '.bin');

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

function ensurePnpm() {
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

const [job, ...rest] = process.argv.slice(2);
ensurePnpm();
run('pnpm', ['install', ...(process.env.CI ? ['--frozen-lockfile'] : [])]);

switch (job) {
  case 'test':
    run('pnpm', ['exec', 'turbo', 'run', 'build', 'typecheck', '--output-logs=errors-only']);
    process.exit(run('pnpm', ['exec', 'vitest', 'run', ...rest], { allowFail: true }));
    break;
  case 'start':
    run('pnpm', ['exec', 'turbo', 'run', 'build', '--filter=quicpool...', '--output-logs=errors-only']);
    process.exit(run('node', [join(root, 'apps', 'pooler', 'dist', 'cli.js'), 'start', ...rest], { allowFail: true }));
    break;
  default:
    console.error('usage: node tooling/scripts/run.mjs <test|start> [args...]');
    process.exit(2);
}
