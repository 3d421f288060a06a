import { describe, expect, it } from 'vitest';
import { qualifies, roleFromParameters } from './server-role.js';
import type { ServerRole, TargetSessionAttrs } from './server-role.js';

const primary: ServerRole = { standby: false, readOnly: false };
const readOnlyPrimary: ServerRole = { standby: false, readOnly: true };
const standby: ServerRole = { standby: true, readOnly: true };

describe('target_session_attrs (libpq\'s meanings)', () => {
  it.each<[TargetSessionAttrs, boolean, boolean, boolean]>([
    // attrs, primary, read-only primary, standby
    ['any', true, true, true],
    ['read-write', true, false, false],
    ['read-only', false, true, true],
    ['primary', true, true, false],
    ['standby', false, false, true],
    ['prefer-standby', false, false, true],
  ])('%s takes a primary: %s, a read-only primary: %s, a standby: %s', (attrs, p, r, s) => {
    expect([qualifies(attrs, primary), qualifies(attrs, readOnlyPrimary), qualifies(attrs, standby)]).toEqual([p, r, s]);
  });

  it('prefer-standby takes any server on its fallback pass; an unknown role qualifies only for any', () => {
    expect(qualifies('prefer-standby', primary, 'fallback')).toBe(true);
    expect(qualifies('any', undefined)).toBe(true);
    expect(qualifies('read-write', undefined)).toBe(false);
  });

  it('reads the role a PostgreSQL 14+ server reports', () => {
    expect(roleFromParameters(new Map([['in_hot_standby', 'on'], ['default_transaction_read_only', 'off']]))).toEqual(standby);
    expect(roleFromParameters(new Map([['in_hot_standby', 'off'], ['default_transaction_read_only', 'on']]))).toEqual(readOnlyPrimary);
    expect(roleFromParameters(new Map([['in_hot_standby', 'off'], ['default_transaction_read_only', 'off']]))).toEqual(primary);
    expect(roleFromParameters(new Map([['server_version', '13.4']]))).toBeUndefined();
  });
});
