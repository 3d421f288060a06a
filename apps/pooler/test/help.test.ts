// `quicpool start --help` states the config file lookup as start() does it: --config, else
// $QUICPOOL_CONFIG, else ./quicpool.toml in the working directory, else defaults only.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cli } from './daemon.js';

function start(cwd: string, args: readonly string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const { QUICPOOL_CONFIG: _ignored, ...base } = process.env;
    const child = spawn(process.execPath, [cli, 'start', ...args], { cwd, env: { ...base, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (out += b.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.once('exit', (code) => (clearTimeout(timer), resolve({ code, out })));
  });
}

describe('quicpool start: which config file', () => {
  let dir = '';
  afterAll(async () => {
    if (dir !== '') await rm(dir, { recursive: true, force: true });
  });

  it('--help states the lookup order that start follows', async () => {
    dir = await mkdtemp(join(tmpdir(), 'quicpool-help-'));
    // Each file has its own unknown key, so the error names the file that was read (and nothing starts).
    await writeFile(join(dir, 'quicpool.toml'), '[pool]\nfrom_cwd = 1\n');
    await writeFile(join(dir, 'env.toml'), '[pool]\nfrom_env = 1\n');
    await writeFile(join(dir, 'flag.toml'), '[pool]\nfrom_flag = 1\n');

    const help = await start(dir, ['--help'], {});
    expect(help.code).toBe(0);
    expect(help.out).toContain('--config FILE, else $QUICPOOL_CONFIG when set, else ./quicpool.toml when it exists');

    const flag = await start(dir, ['--config', 'flag.toml'], { QUICPOOL_CONFIG: 'env.toml' });
    expect([flag.code, flag.out]).toEqual([2, expect.stringContaining('pool.from_flag: unknown key')]);
    const env = await start(dir, [], { QUICPOOL_CONFIG: 'env.toml' });
    expect([env.code, env.out]).toEqual([2, expect.stringContaining('pool.from_env: unknown key')]);
    const cwd = await start(dir, [], {});
    expect([cwd.code, cwd.out]).toEqual([2, expect.stringContaining('pool.from_cwd: unknown key')]);
  });
});
