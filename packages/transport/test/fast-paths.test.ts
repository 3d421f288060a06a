// The fast paths the pooler's figures are measured with must be on: on a Node release that takes
// away what one needs (an internal field, a binding) this test fails, so the release is known to
// be slower before it ships, not after. Turning one off on purpose (its variable) fails it too.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { fastPaths, fastPathsLine } from '../src/fast-paths.js';

afterEach(() => {
  vi.unstubAllEnvs();
  vi.resetModules();
});

describe('fast paths', () => {
  it.each(fastPaths().map((p) => [p.name, p] as const))('%s is on with this Node.js', (_, path) => {
    expect({ name: path.name, active: path.active, reason: path.reason }).toEqual({ name: path.name, active: true, reason: null });
  });

  it('each is reported off, saying why, when its variable turns it off', async () => {
    const paths = fastPaths();
    for (const path of paths) {
      vi.resetModules();
      for (const other of paths) vi.stubEnv(other.off.split('=')[0] ?? '', other === path ? other.off.split('=')[1] : '');
      const fresh = (await import('../src/fast-paths.js')).fastPaths();
      expect(fresh.find((p) => p.name === path.name)).toMatchObject({ active: false, reason: path.off });
      expect(fresh.filter((p) => !p.active).map((p) => p.name)).toEqual([path.name]);
      vi.unstubAllEnvs();
    }
  });

  it('prints as one line', () => {
    const line = fastPathsLine([
      { name: 'tcpDirectWrite', what: '', active: true, reason: null, off: '' },
      { name: 'udpBatched', what: '', active: false, reason: 'no module', off: '' },
    ]);
    expect(line).toBe('tcpDirectWrite on, udpBatched OFF (no module)');
  });
});
