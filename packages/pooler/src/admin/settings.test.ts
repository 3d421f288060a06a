import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { setStatements, TRACKED_PARAMETERS } from '../session/startup-parameters.js';
import { parseSettings } from './settings.js';

describe('parseSettings', () => {
  it("reads back every replay the pooler sends (set_config with any value, RESET)", () => {
    const names = [...TRACKED_PARAMETERS];
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom(...names), fc.option(fc.string(), { nil: null })), (o) => {
        const changes = new Map(Object.entries(o));
        if (changes.size === 0) return;
        const parsed = parseSettings(setStatements(changes));
        const sets = [...changes].filter(([, v]) => v !== null);
        const resets = [...changes].filter(([, v]) => v === null).map(([n]) => ({ kind: 'reset', name: n }));
        expect(parsed).toEqual([...(sets.length > 0 ? [{ kind: 'set_config', values: sets }] : []), ...resets]);
      }),
    );
  });

  it('reads SET and RESET as drivers send them', () => {
    expect(parseSettings("SET application_name = 'a''b'")).toEqual([{ kind: 'set', name: 'application_name', value: "a'b" }]);
    expect(parseSettings('set session TimeZone to UTC;')).toEqual([{ kind: 'set', name: 'timezone', value: 'utc' }]);
    expect(parseSettings('SET extra_float_digits = 3; SET search_path TO a, "B"')).toEqual([
      { kind: 'set', name: 'extra_float_digits', value: '3' },
      { kind: 'set', name: 'search_path', value: 'a, B' },
    ]);
    expect(parseSettings('SET statement_timeout TO DEFAULT; RESET ALL')).toEqual([
      { kind: 'set', name: 'statement_timeout', value: null },
      { kind: 'reset', name: null },
    ]);
  });

  it('is null for anything else, including a settings statement beside another command', () => {
    for (const q of ['SHOW POOLS', 'SELECT 1', 'SET', "SELECT pg_catalog.set_config('a', 'b', false), 1", "SET a = 'b'; SHOW POOLS", "SET a = 'unterminated", 'SET session_authorization = x y', '', ';']) {
      expect(parseSettings(q), q).toBeNull();
    }
  });
});
