import { describe, expect, it } from 'vitest';
import { encodeFrontend } from '@quicpool/wire';
import { mayChangeSessionState, sessionStateChange } from './session-state-change.js';

const q = (query: string) => mayChangeSessionState(0x51, encodeFrontend({ type: 'Query', query }));
const parse = (name: string, query: string) => mayChangeSessionState(0x50, encodeFrontend({ type: 'Parse', name, query, parameterTypes: [] }));

describe('mayChangeSessionState', () => {
  it.each([
    'SET work_mem = 1', 'SET search_path = x', 'set session authorization bob', '  RESET work_mem', 'prepare p as select 1', 'LISTEN ch', 'set session statement_timeout = 5',
    'create temp table t (x int)', 'CREATE LOCAL TEMPORARY TABLE t (x int)', 'declare c cursor with hold for select 1',
    "select set_config('a.b', '1', false)", 'select pg_advisory_lock(1)', 'select 1; set x.y = 1',
    '/* leading */ SET x.y = 1', '-- comment\nset x.y = 1', 'begin; select 1;\n  reset role',
  ])('flags %j', (sql) => expect(q(sql)).toBe(true));

  it.each(['select 1', 'SET LOCAL x.y = 1', 'set transaction isolation level serializable', 'SET CONSTRAINTS ALL DEFERRED', "select 'settings'", 'set TimeZone to \'UTC\'', 'SET TIME ZONE 1', 'set session timezone = 1', 'RESET ALL', 'reset datestyle', 'discard all', 'deallocate all', 'set names \'UTF8\'', 'insert into t values (1)', 'begin', 'commit'])(
    'does not flag %j',
    (sql) => expect(q(sql)).toBe(false),
  );

  it('looks at the text of Parse, whatever its name (named statements are re-prepared per backend)', () => {
    expect(parse('s1', 'select 1')).toBe(false);
    expect(parse('', 'select $1')).toBe(false);
    expect(parse('', 'set x.y = 1')).toBe(true);
  });

  it('names what changes the state (SHOW CLIENTS pinned)', () => {
    const why = (query: string) => sessionStateChange(0x51, encodeFrontend({ type: 'Query', query }));
    expect(['SET work_mem = 1', '/* c */ set x.y = 1', 'select 1;\n reset role', 'prepare p as select 1', 'LISTEN ch', "LOAD 'auto_explain'", 'declare c cursor with hold for select 1', 'create temp table t (x int)'].map(why)).toEqual([
      'SET', 'SET', 'RESET', 'PREPARE', 'LISTEN', 'LOAD', 'DECLARE WITH HOLD', 'CREATE TEMP',
    ]);
    expect(["select set_config('a.b', '1', false)", 'select pg_advisory_lock(1)', 'select 1'].map(why)).toEqual(['set_config', 'advisory_lock', null]);
  });
});
