import { describe, expect, it } from 'vitest';
import { usageOf } from './command-line.js';

describe('usageOf', () => {
  it('lists every option with its value name, default and repeatability', () => {
    const usage = usageOf('pnpm bench:x', {
      json: { type: 'boolean', default: false },
      'pool-size': { type: 'string', default: '20' },
      target: { type: 'string', multiple: true },
    });
    expect(usage.split('\n')).toEqual([
      'usage: pnpm bench:x [options]',
      '  --json',
      '  --pool-size POOL_SIZE (default 20)',
      '  --target TARGET (repeatable)',
      '  --help',
    ]);
  });
});
