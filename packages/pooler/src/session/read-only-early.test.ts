import { describe, expect, it } from 'vitest';
import { encodeFrontend, MessageType } from '@quicpool/wire';
import { runsBeforeConfirmation } from './read-only-early.js';

const q = (query: string): boolean => runsBeforeConfirmation(MessageType.Query, encodeFrontend({ type: 'Query', query }));

describe('read-only 0-RTT policy: what may run before confirmation', () => {
  it('single statements that start with a reading keyword', () => {
    for (const sql of [
      'select 1', 'SELECT * FROM t;', '  /* lead */ -- line\n select 1', 'WITH x AS (SELECT 1) SELECT * FROM x', 'values (1)', 'TABLE t', 'show server_version',
      "select ';' as semi", "select 'it''s; fine'", "select E'a\\'; b'", 'select "a;b" from t', 'select $$;$$', 'select $tag$ ; $tag$ ;  -- done',
      'select 1 /* ; /* nested ; */ still */', 'select a$b from t',
    ]) {
      expect(q(sql), sql).toBe(true);
    }
  });

  it('everything else waits: writes, transaction control, SET, several statements, anything not understood', () => {
    for (const sql of [
      'insert into t values (1)', 'update t set x = 1', 'delete from t', 'begin', 'BEGIN READ WRITE', 'commit', 'rollback', 'start transaction',
      'set transaction read write', 'SET default_transaction_read_only = off', 'select 1; commit', 'select 1; insert into t values (1)',
      'call p()', 'copy t from stdin', 'do $$ begin end $$', 'lock table t', 'savepoint a', 'explain analyze delete from t',
      "select 'unterminated", 'select $$ unterminated', 'select 1 /* unterminated', '', '   ', ';', '-- only a comment',
      `select '${'x'.repeat(20_000)}'`,
    ]) {
      expect(q(sql), sql).toBe(false);
    }
  });

  it('only simple-protocol queries', () => {
    const parse = encodeFrontend({ type: 'Parse', name: '', query: 'select 1', parameterTypes: [] });
    expect(runsBeforeConfirmation(MessageType.Parse, parse)).toBe(false);
    expect(runsBeforeConfirmation(MessageType.Sync, encodeFrontend({ type: 'Sync' }))).toBe(false);
  });
});
