import { describe, expect, it } from 'vitest';
import { usageOf, wholeOption } from './command-line.js';

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

  it('reads a whole-number option, refusing fractions and values below its minimum', () => {
    expect(wholeOption('clients', '20')).toBe(20);
    expect(wholeOption('delay', '0', 0)).toBe(0);
    expect(() => wholeOption('clients', '0')).toThrow('--clients must be a whole number >= 1, got 0');
    expect(() => wholeOption('seconds', '1.5')).toThrow('--seconds must be a whole number >= 1, got 1.5');
  });
});
