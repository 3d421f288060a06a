// The one program as built: its help lists every subcommand, each subcommand's help lists its
// options from its table, and a usage error exits 2 with the message and that usage.
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBenchScript } from '../../test/build-bench.js';
import { SUBCOMMANDS } from '../commands/index.js';

let built: ReturnType<typeof buildBenchScript>;
beforeAll(() => {
  built = buildBenchScript();
}, 120_000);
afterAll(() => built.remove());

const run = (...args: string[]): { status: number | null; stdout: string; stderr: string } => {
  const r = spawnSync(process.execPath, [built.script, ...args], { encoding: 'utf8', timeout: 30_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
};

describe('quicpool-bench', () => {
  it('lists every subcommand under --help, and exits 2 without one', () => {
    const help = run('--help');
    expect(help.status).toBe(0);
    for (const s of SUBCOMMANDS) expect(help.stdout).toContain(`  ${s.name} `);
    expect(run().status).toBe(2);
    const unknown = run('nope');
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toContain("unknown subcommand 'nope'");
  });

  it('prints each subcommand\'s options from its table', async () => {
    for (const s of SUBCOMMANDS) {
      const help = run(s.name, '--help');
      expect(help.status, s.name).toBe(0);
      expect(help.stdout).toContain(`usage: quicpool-bench ${s.name} [options]`);
      for (const name of Object.keys((await s.load()).options)) expect(help.stdout, s.name).toContain(`  --${name}`);
    }
  }, 60_000);

  it('answers a wrong option or value with the message, the usage and exit code 2', () => {
    const bad = run('lan', '--bogus');
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain("Unknown option '--bogus'");
    expect(bad.stderr).toContain('usage: quicpool-bench lan [options]');
    const value = run('faults', '--clients', '0');
    expect(value.status).toBe(2);
    expect(value.stderr).toContain('--clients must be a whole number >= 1, got 0');
  });
});
