import { describe, expect, it } from 'vitest';
import { DEFAULT_POOL_SETTINGS, resolvePoolSettings, SettingError } from './pool-settings.js';

describe('resolvePoolSettings', () => {
  it('fills the documented defaults', () => {
    expect(resolvePoolSettings()).toEqual(DEFAULT_POOL_SETTINGS);
    expect(resolvePoolSettings({ poolSize: 5 })).toMatchObject({ poolSize: 5, poolMode: 'transaction' });
  });

  it('names the key that is wrong', () => {
    expect(() => resolvePoolSettings({ poolSize: 0 })).toThrow(new SettingError('poolSize', 'must be a whole number >= 1, got 0'));
    expect(() => resolvePoolSettings({ poolSize: 2, minPoolSize: 3 })).toThrow(/^minPoolSize: must not exceed poolSize/);
    expect(() => resolvePoolSettings({ poolMode: 'statement' as never })).toThrow(/^poolMode: must be 'transaction' or 'session'/);
    expect(() => resolvePoolSettings({ queryWaitTimeoutMs: 1.5 })).toThrow(/^queryWaitTimeoutMs:/);
  });
});
