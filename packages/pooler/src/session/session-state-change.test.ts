import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeFrontend } from '@quicpool/wire';
import { matchText, mayChangeSessionState, mayMatch, sessionStateChange } from './session-state-change.js';

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

describe('the byte pre-filter', () => {
  // Pieces of SQL around every keyword, separator and comment the expressions look at.
  const pieces = [
    ' ', '\t', '\n', '\r', '\u00a0', ';', '--', '/*', '*/', "'", '"', 'x', '_', '1', '=', 'é',
    'set', 'SET', 'Set', 'session', 'local', 'transaction', 'reset', 'RESET', 'all', 'prepare', 'listen', 'LOAD', 'declare', 'with', 'hold',
    'create', 'temp', 'TEMPORARY', 'global', 'select', 'SELECT', 'from', 'pgbench_accounts', 'time zone', 'timezone', 'to', 'names',
    'set_config', 'SET_CONFIG', 'advisory_lock', 'pg_advisory_lock', 'dblink_connect', 'sets_', 'ory_', 'ink_',
  ];
  const sql = fc.array(fc.constantFrom(...pieces), { maxLength: 24 }).map((a) => a.join(''));

  it('clears a text only when neither expression matches it', () => {
    fc.assert(
      fc.property(sql, (text) => {
        const bytes = Buffer.from(text, 'latin1');
        if (!mayMatch(bytes, 0, bytes.length)) expect(matchText(text)).toBeNull();
      }),
      { numRuns: 5000 },
    );
  });

  it('clears the common queries without the expressions', () => {
    const clear = (text: string) => !mayMatch(Buffer.from(text, 'latin1'), 0, text.length);
    expect(['SELECT abalance FROM pgbench_accounts WHERE aid = 1;', 'select 1', 'insert into t values (1)', 'BEGIN', 'update t set x = 1', 'with q as (select 1) select * from q', 'select 1; commit', 'delete from t'].map(clear)).toEqual([true, true, true, true, true, true, true, true]);
    expect(['set x.y = 1', ' /* c */ select 1', 'select 1;\n Listen ch', "select set_config('a', 'b', false)", 'settings'].map(clear)).toEqual([false, false, false, false, false]);
  });
});
