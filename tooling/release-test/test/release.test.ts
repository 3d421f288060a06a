// The release as a user gets it: the release step's prebuilt native module, every published
// package put on a throwaway registry by the release's own publish command (`pnpm publish -r`,
// which rewrites `workspace:` ranges), then, in empty folders outside the repository, plain
// `npm install @quicpool/client` and `npm install -g quicpool`, the installed daemon started on
// its embedded PostgreSQL, and one query over QUIC through the installed client. Last, the
// native module's build from source (no fitting prebuilt binary) and its failure path, which
// must leave a working install that uses node:dgram.
import { chmod, copyFile, mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { run, startDaemon, userEnv } from './processes.js';
import type { Daemon } from './processes.js';
import { startRegistry } from './registry.js';
import type { LocalRegistry } from './registry.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const PUBLISHED: Readonly<Record<string, string>> = {
  '@quicpool/wire': 'packages/wire',
  '@quicpool/udp': 'packages/udp',
  '@quicpool/transport': 'packages/transport',
  '@quicpool/pooler': 'packages/pooler',
  '@quicpool/postgres': 'packages/postgres',
  '@quicpool/client': 'packages/client',
  quicpool: 'apps/pooler',
};
const PREBUILDS = join(root, 'packages', 'udp', 'prebuilds');
const PREBUILT = `prebuilds/${process.platform}-${process.arch}/@quicpool+udp.node`;

interface QueryResult {
  rows: { answer: number; data_directory: string; version: string }[];
  connections: number;
  udp: { io: { kind: string; reason: string | null }; path: string | null; reason: string | null };
  warnings: string[];
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** The last line of a program's output, parsed (our scripts print one JSON line at the end). */
function lastJson<T>(output: string): T {
  const line = output.trim().split('\n').pop() ?? '';
  return JSON.parse(line) as T;
}

const timings: Record<string, number> = {};
async function timed<T>(step: string, f: () => Promise<T>): Promise<T> {
  const t0 = performance.now();
  try {
    return await f();
  } finally {
    timings[step] = Math.round(performance.now() - t0);
  }
}

describe('a release that installs', () => {
  let tmp = '';
  let registry: LocalRegistry | undefined;
  let daemon: Daemon | undefined;
  let prebuildsExisted = true;

  afterAll(async () => {
    await daemon?.stop(5_000);
    await registry?.close();
    // The release step writes packages/udp/prebuilds (ignored by git); leave the checkout as found.
    if (!prebuildsExisted) await rm(PREBUILDS, { recursive: true, force: true });
    if (tmp !== '') await rm(tmp, { recursive: true, force: true });
    process.stdout.write(`release test steps (ms): ${JSON.stringify(timings)}\n`);
  });

  it('publishes every package to a local registry; npm installs the client and the CLI outside the repo; the installed client queries the installed daemon over QUIC on the native UDP path', async () => {
    for (const [name, dir] of Object.entries(PUBLISHED)) {
      expect(existsSync(join(root, dir, 'dist')), `${name} is not built: run \`npm run build\` (npm test does) first`).toBe(true);
    }
    tmp = await mkdtemp(join(tmpdir(), 'quicpool-release-'));
    // As root, the embedded PostgreSQL runs as `postgres`, which must reach the installed binaries
    // and the state folder inside this one (mkdtemp makes it 0700).
    await chmod(tmp, 0o711);
    const env = userEnv();
    const [app, globalPrefix, work, state, cache, reg] = ['app', 'global', 'work', 'state', 'npm-cache', 'registry'].map((d) => join(tmp, d)) as [string, string, string, string, string, string];
    for (const d of [app, globalPrefix, work, reg]) await mkdir(d, { recursive: true });

    // The release step: the native module's prebuilt binary (compiled in a temp copy of its
    // sources, so the build/Release that other tests load is untouched).
    prebuildsExisted = existsSync(PREBUILDS);
    await timed('prebuild', () => run(process.execPath, ['tooling/scripts/run.mjs', 'release', 'prebuild'], { cwd: root, env: process.env, timeoutMs: 120_000 }));
    expect(existsSync(join(root, 'packages', 'udp', PREBUILT))).toBe(true);

    // A registry whose uplink is the one npm uses here (the machine reaches npm through it).
    const upstream = (await run('npm', ['config', 'get', 'registry'], { cwd: work, env, timeoutMs: 30_000 })).output.trim();
    expect(upstream).toMatch(/^https?:\/\//);
    registry = await timed('registry', () => startRegistry(reg, upstream));
    const { url } = registry;

    // The release's publish command, as docs/releasing.md runs it (git checks off: a test runs on any branch).
    const published = await timed('publish', () =>
      run(process.execPath, ['tooling/scripts/run.mjs', 'release', 'publish', '--registry', url, '--npmrc-auth-file', registry?.authFile ?? '', '--no-git-checks'], { cwd: root, env: process.env, timeoutMs: 120_000 }),
    );
    for (const name of Object.keys(PUBLISHED)) expect(published.output).toContain(`Published package ${name}@`);

    // Plain npm, empty folders outside the repository, a cache of their own.
    await writeFile(join(app, 'package.json'), `${JSON.stringify({ name: 'release-test-app', private: true, type: 'module' }, null, 2)}\n`);
    await writeFile(join(app, '.npmrc'), `registry=${url}\n`);
    const npmFlags = ['--cache', cache, '--no-audit', '--no-fund', '--loglevel=warn'];
    await timed('npm install (client + CLI, in parallel)', () =>
      Promise.all([
        run('npm', ['install', '@quicpool/client', ...npmFlags], { cwd: app, env, timeoutMs: 180_000 }),
        run('npm', ['install', '-g', '--prefix', globalPrefix, '--registry', url, 'quicpool', ...npmFlags], { cwd: work, env, timeoutMs: 180_000 }),
      ]),
    );
    const installedCli = join(globalPrefix, 'lib', 'node_modules', 'quicpool');
    for (const dir of [join(app, 'node_modules', '@quicpool', 'udp'), join(installedCli, 'node_modules', '@quicpool', 'udp')]) {
      expect(existsSync(join(dir, PREBUILT)), `${dir} has the prebuilt native module`).toBe(true);
    }
    for (const dir of [join(app, 'node_modules', '@quicpool'), join(installedCli, 'node_modules', '@quicpool')]) {
      for (const pkg of await readdir(dir)) {
        const manifest = await readFile(join(dir, pkg, 'package.json'), 'utf8');
        expect(manifest, `${dir}/${pkg}`).not.toContain('workspace:');
        expect(manifest, `${dir}/${pkg}: no source condition for users`).not.toContain('@quicpool/source');
      }
    }

    // The installed daemon: embedded PostgreSQL (no upstream configured), free ports, a temp state folder.
    const bin = join(globalPrefix, 'bin', 'quicpool');
    const pgPort = await freePort();
    daemon = startDaemon(bin, ['start', '--state-dir', state, '--pg-port', String(pgPort), '--port', '0', '--quic-port', '0', '--metrics-port', '0'], { cwd: work, env });
    const quicLine = await timed('daemon start', async () => (await daemon?.waitFor(/^QUIC:\s+new QuicPool\((\{.*\})\)/m, 90_000))?.[1] ?? '');
    expect(quicLine).not.toBe('');

    // The installed client, as a user's program would use it: the options as the banner printed them.
    await copyFile(fileURLToPath(new URL('./app/query.mjs', import.meta.url)), join(app, 'query.mjs'));
    const queried = await timed('query over QUIC', () => run(process.execPath, ['query.mjs', quicLine], { cwd: app, env, timeoutMs: 60_000 }));
    const result = lastJson<QueryResult>(queried.output);
    expect(result.rows).toHaveLength(1);
    expect(result.rows[0]?.answer).toBe(42);
    expect(result.rows[0]?.data_directory).toBe(join(state, 'pgdata')); // the daemon's own embedded PostgreSQL
    expect(result.rows[0]?.version).toMatch(/^PostgreSQL 17\./);
    expect(result.connections).toBe(1); // it went over QUIC
    expect(result.udp.io).toEqual({ kind: 'native', reason: null });
    expect(result.udp.path).toBe(join(app, 'node_modules', '@quicpool', 'udp', PREBUILT));
    expect(result.warnings).toEqual([]);

    expect(await timed('daemon stop', async () => daemon?.stop(20_000))).toBe(0);
    expect(daemon.output()).not.toContain('QUICPOOL_UDP_FALLBACK'); // the daemon's QUIC used the native module too
    expect(daemon.output()).toMatch(/"msg":"stopped"/);

    // No fitting prebuilt binary: the package's install script builds from source with npm's own
    // node-gyp, and when that fails the install still succeeds and QUIC falls back to node:dgram.
    const udpDir = join(app, 'node_modules', '@quicpool', 'udp');
    await rm(join(udpDir, 'prebuilds'), { recursive: true, force: true });
    const failed = await timed('rebuild without a compiler', () => run('npm', ['rebuild', '@quicpool/udp', '--foreground-scripts', ...npmFlags], { cwd: app, env: { ...env, CC: 'false', CXX: 'false' }, timeoutMs: 120_000 }));
    expect(failed.output).toContain('could not build the native module; QUIC will use node:dgram');
    const fallback = lastJson<Pick<QueryResult, 'udp'>>((await run(process.execPath, ['query.mjs', 'io'], { cwd: app, env, timeoutMs: 30_000 })).output);
    expect(fallback.udp.io.kind).toBe('dgram');
    await timed('rebuild from source', () => run('npm', ['rebuild', '@quicpool/udp', '--foreground-scripts', ...npmFlags], { cwd: app, env, timeoutMs: 120_000 }));
    expect((await stat(join(udpDir, 'build', 'Release', 'udp.node'))).isFile()).toBe(true);
    const built = lastJson<Pick<QueryResult, 'udp'>>((await run(process.execPath, ['query.mjs', 'io'], { cwd: app, env, timeoutMs: 30_000 })).output);
    expect(built.udp.io).toEqual({ kind: 'native', reason: null });
    expect(built.udp.path).toBe(join(udpDir, 'build', 'Release', 'udp.node'));
  });
});
