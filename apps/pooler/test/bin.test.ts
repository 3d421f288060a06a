// The `quicpool` command as npm installs it: bin/quicpool linked into some bin directory runs
// dist/cli.js beside its real path, under the daemon's V8 settings (bin/quicpool says why).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const bin = fileURLToPath(new URL('../bin/quicpool', import.meta.url));
/** The V8 settings bin/quicpool runs the daemon with (its comments say why). */
const DAEMON_FLAGS = '--initial-old-space-size=64 --max-inlined-bytecode-size=1000 --max-inlined-bytecode-size-cumulative=4000 --max-inlined-bytecode-size-absolute=12000';
const dir = mkdtempSync(join(tmpdir(), 'quicpool-bin-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('bin/quicpool', () => {
  it('runs the CLI through a symlink, with the daemon V8 flags, on the node of PATH', () => {
    const link = join(dir, 'quicpool');
    symlinkSync(bin, link);
    const env = { ...process.env, PATH: [dirname(process.execPath), process.env.PATH ?? ''].join(delimiter) };
    const out = execFileSync(link, ['--version'], { env, encoding: 'utf8' });
    expect(out).toMatch(new RegExp(`^quicpool \\d+\\.\\d+\\.\\d+ \\(Node\\.js v\\d+\\.\\d+\\.\\d+, node flags: ${DAEMON_FLAGS}\\)\\n`));
    // The transport's fast paths, all on with this Node (packages/transport/test/fast-paths.test.ts).
    expect(out).toMatch(/\nfast paths: tcpDirectWrite on, tcpReadInto on, udpBatched on, plainLane on\n$/);
    expect(out).toContain(process.version);
  });

  it('--version says which fast path is off, and why', () => {
    const out = execFileSync(bin, ['--version'], { env: { ...process.env, QUICPOOL_TCP_READ_INTO: '0' }, encoding: 'utf8' });
    expect(out).toMatch(/\nfast paths: tcpDirectWrite on, tcpReadInto OFF \(QUICPOOL_TCP_READ_INTO=0\), udpBatched on, plainLane on\n$/);
    const off = execFileSync(bin, ['--version'], { env: { ...process.env, QUICPOOL_PLAIN_LANE: '0' }, encoding: 'utf8' });
    expect(off).toMatch(/, plainLane OFF \(QUICPOOL_PLAIN_LANE=0\)\n$/);
  });

  it('adds the node flags of QUICPOOL_NODE_FLAGS, also those NODE_OPTIONS refuses', () => {
    // --cpu-prof is one NODE_OPTIONS refuses ("is not allowed in NODE_OPTIONS").
    const profiles = join(dir, 'profiles');
    const env = { ...process.env, QUICPOOL_NODE_FLAGS: `--cpu-prof --cpu-prof-dir=${profiles}` };
    const out = execFileSync(bin, ['--version'], { env, encoding: 'utf8' });
    expect(out).toContain(`node flags: ${DAEMON_FLAGS} --cpu-prof --cpu-prof-dir=${profiles})`);
    expect(readdirSync(profiles).filter((f) => f.endsWith('.cpuprofile'))).toHaveLength(1);
  });

  it('passes arguments and the exit code through', () => {
    const run = (args: string[]): number => {
      try {
        execFileSync(bin, args, { stdio: 'ignore' });
        return 0;
      } catch (e) {
        return (e as { status: number }).status;
      }
    };
    expect(run(['--help'])).toBe(0);
    expect(run(['no-such-command'])).toBe(2);
  });
});
