#!/usr/bin/env node
// Builds the Node-API module (build/Release/udp.node) with node-gyp.
//
//   node scripts/native.mjs build     the monorepo's `build`: rebuild when the C source or binding.gyp
//                                      is newer than the module; a failure fails the build
//   node scripts/native.mjs install   a package install: nothing to do when a prebuilt binary for this
//                                      platform is shipped (prebuilds/) or a build exists; otherwise
//                                      build from source. Never fails the install: without the module
//                                      @quicpool/transport uses node:dgram and says so once
//   node scripts/native.mjs prebuild  the release step: prebuildify writes prebuilds/linux-x64/*.node
//                                      (Node-API, so one binary serves every Node version >= 20), which
//                                      the published package ships; never committed. It compiles in a
//                                      temp copy of the sources, so build/Release (what this checkout's
//                                      tests load) is never removed or replaced meanwhile
//   --force                            rebuild in any case
//
// Headers: when this Node's own headers are installed beside it (<prefix>/include/node, as on
// Debian's nodejs), node-gyp is pointed at them (`--nodedir`) and needs no download.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const mode = process.argv[2] ?? 'build';
const force = process.argv.includes('--force');
const output = join(root, 'build', 'Release', 'udp.node');
const sources = [join(root, 'binding.gyp'), ...['udp.c', 'groups.c', 'groups.h', 'napi-util.h', 'sockaddr.h'].map((f) => join(root, 'src', 'native', f))];

const mtime = (p) => (existsSync(p) ? statSync(p).mtimeMs : -1);

function prebuiltFits() {
  const dir = join(root, 'prebuilds', `${process.platform}-${process.arch}`);
  return existsSync(dir) && readdirSync(dir).some((f) => f.endsWith('.node'));
}

function nodeGyp() {
  const require = createRequire(import.meta.url);
  try {
    return require.resolve('node-gyp/bin/node-gyp.js');
  } catch {
    // not a dependency here (an installed package): npm's own copy
  }
  if (process.env.npm_config_node_gyp && existsSync(process.env.npm_config_node_gyp)) return process.env.npm_config_node_gyp;
  const bundled = join(dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
  return existsSync(bundled) ? bundled : null;
}

/** Points node-gyp at this Node's own headers when they are installed beside it (no download). */
function localNodedir() {
  const prefix = join(dirname(process.execPath), '..');
  return existsSync(join(prefix, 'include', 'node', 'node_api.h')) ? prefix : null;
}

function build() {
  const gyp = nodeGyp();
  if (gyp === null) return { ok: false, why: 'node-gyp not found (neither a dependency nor npm\'s own copy)' };
  const args = [gyp, 'rebuild', '--release'];
  const nodedir = localNodedir();
  if (nodedir !== null) args.push(`--nodedir=${nodedir}`);
  const r = spawnSync(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
  if (r.status === 0 && existsSync(output)) return { ok: true };
  const tail = `${r.stdout ?? ''}${r.stderr ?? ''}`.trim().split('\n').slice(-15).join('\n');
  return { ok: false, why: `node-gyp rebuild failed (exit ${r.status ?? r.signal})\n${tail}` };
}

if (process.platform !== 'linux') {
  // recvmmsg/sendmmsg, GSO and GRO are Linux's: elsewhere the transport uses node:dgram.
  console.log('[@quicpool/udp] not Linux: no native module (node:dgram is used)');
  process.exit(0);
}

if (mode === 'prebuild') {
  // Against this Node's headers (-t): a Node-API module's ABI does not depend on the version.
  // prebuildify runs `node-gyp rebuild` where the sources are (it deletes build/ first), so it gets
  // a temp copy of what the build needs and writes only prebuilds/ here (--out).
  const bin = createRequire(import.meta.url).resolve('prebuildify/bin.js');
  const gyp = nodeGyp();
  if (gyp === null) {
    console.error('[@quicpool/udp] node-gyp not found (neither a dependency nor npm\'s own copy)');
    process.exit(1);
  }
  const stage = mkdtempSync(join(tmpdir(), 'quicpool-udp-prebuild-'));
  let status = 1;
  try {
    for (const f of ['package.json', ...sources.map((s) => s.slice(root.length + 1))]) cpSync(join(root, f), join(stage, f));
    const nodedir = localNodedir();
    const env = { ...process.env, PREBUILD_NODE_GYP: gyp, ...(nodedir === null ? {} : { npm_config_nodedir: nodedir }) };
    rmSync(join(root, 'prebuilds'), { recursive: true, force: true }); // only this build's binaries ship
    const r = spawnSync(process.execPath, [bin, '--napi', '--strip', '-t', process.versions.node, '--cwd', stage, '--out', root], { stdio: 'inherit', env });
    status = r.status ?? 1;
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
  process.exit(status);
}

if (mode === 'install') {
  if (!force && (prebuiltFits() || existsSync(output))) process.exit(0);
  const r = build();
  if (!r.ok) console.warn(`[@quicpool/udp] could not build the native module; QUIC will use node:dgram.\n${r.why}`);
  process.exit(0);
}

const stale = force || mtime(output) < Math.max(...sources.map(mtime));
if (!stale) process.exit(0);
const r = build();
if (!r.ok) {
  console.error(`[@quicpool/udp] ${r.why}`);
  process.exit(1);
}
console.log('[@quicpool/udp] built build/Release/udp.node');
