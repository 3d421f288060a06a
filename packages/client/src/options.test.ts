import { describe, expect, it } from 'vitest';
import { DEFAULT_SESSION_MANAGER_OPTIONS, resolveSessionManagerOptions, sessionCapacity } from './options.js';

describe('session manager options', () => {
  it('defaults and capacity', () => {
    expect(resolveSessionManagerOptions()).toEqual(DEFAULT_SESSION_MANAGER_OPTIONS);
    expect(sessionCapacity(resolveSessionManagerOptions({ maxConnections: 50, streamsPerConnection: 40 }))).toBe(2000);
  });

  it('rejects non-positive or fractional counts, naming the option', () => {
    expect(() => resolveSessionManagerOptions({ maxConnections: 0 })).toThrow(/^maxConnections must be/);
    expect(() => resolveSessionManagerOptions({ streamsPerConnection: 2.5 })).toThrow(/^streamsPerConnection must be/);
  });
});
