// The scripted sessions of the differential test. Each runs unchanged on every target; what its
// sessions receive is compared with what they receive straight from Postgres. `modes` says where
// the behaviour is defined the same as on a direct connection: session mode always; transaction
// mode where a client that holds no backend between transactions cannot tell (the rest is in
// docs/compatibility.md).
import type { FrontendMessage } from '@quicpool/wire';
import { pgInfo } from './targets.js';
import type { ScriptContext } from './targets.js';

export type PoolMode = 'session' | 'transaction';

export interface Script {
  readonly name: string;
  readonly modes: readonly PoolMode[];
  run(ctx: ScriptContext): Promise<void>;
}

const BOTH: readonly PoolMode[] = ['session', 'transaction'];
const SESSION: readonly PoolMode[] = ['session'];

/** Tables the scripts use (created by the test for this run). */
export const TABLE = {
  unique: `diff_${process.pid}_unique`,
  serial: `diff_${process.pid}_serial`,
  copy: `diff_${process.pid}_copy`,
};

export function setupSql(): string {
  return [
    `drop table if exists ${TABLE.unique}, ${TABLE.serial}, ${TABLE.copy}`,
    `create table ${TABLE.unique} (id int primary key)`,
    `create table ${TABLE.serial} (id int primary key, v int not null)`,
    `insert into ${TABLE.serial} values (1, 0)`,
    `create table ${TABLE.copy} (id int, t text)`,
    `grant all on ${TABLE.unique}, ${TABLE.serial}, ${TABLE.copy} to public`,
  ].join('; ');
}

export function teardownSql(): string {
  return `drop table if exists ${TABLE.unique}, ${TABLE.serial}, ${TABLE.copy}`;
}

const copyData = (s: string): FrontendMessage => ({ type: 'CopyData', data: Buffer.from(s) });
const text = (s: string): Buffer => Buffer.from(s);

/** Bind (text parameters; null is NULL) and Execute of `statement` into the unnamed portal. */
function run(statement: string, parameters: readonly (string | null)[] = []): FrontendMessage[] {
  return [
    { type: 'Bind', portal: '', statement, parameterFormats: [], parameters: parameters.map((v) => (v === null ? null : text(v))), resultFormats: [] },
    { type: 'Execute', portal: '', maxRows: 0 },
  ];
}

/** Parse of an unnamed statement, then `run` of it. */
function unnamed(query: string, parameters: readonly (string | null)[] = []): FrontendMessage[] {
  return [{ type: 'Parse', name: '', query, parameterTypes: [] }, ...run('', parameters)];
}

export const scripts: readonly Script[] = [
  // --- startup --------------------------------------------------------------------------------
  {
    name: 'startup: defaults, then a query',
    modes: BOTH,
    async run(ctx) {
      const s = await ctx.connect('a');
      await s.query('select 1 as one');
    },
  },
  {
    name: 'startup: tracked parameters (application_name, DateStyle, TimeZone, search_path, client_encoding)',
    modes: BOTH,
    async run(ctx) {
      const s = await ctx.connect('a', {
        application_name: 'differential', DateStyle: 'ISO, DMY', TimeZone: 'Asia/Tokyo', search_path: 'pg_catalog, public', client_encoding: 'LATIN1',
      });
      await s.query("show application_name; show datestyle; show timezone; show search_path; show client_encoding; select '2026-12-02 01:02:03+00'::timestamptz::text as ts");
      await s.query("set application_name = 'changed'; set timezone = 'UTC'");
      await s.query("show application_name; show timezone");
    },
  },
  {
    name: 'startup: options (-c statement_timeout) and statement_timeout as startup parameters',
    modes: BOTH,
    async run(ctx) {
      const a = await ctx.connect('a', { options: '-c statement_timeout=1234' });
      await a.query('show statement_timeout');
      const b = await ctx.connect('b', { statement_timeout: '4321' });
      await b.query('show statement_timeout');
    },
  },
  {
    name: 'startup: a database that does not exist (3D000)',
    modes: BOTH,
    async run(ctx) {
      const s = await ctx.open('a');
      await s.startup({ user: pgInfo.trustUser, database: 'no_such_database' });
    },
  },

  // --- errors ---------------------------------------------------------------------------------
  {
    name: 'errors: syntax 42601, undefined table 42P01, division by zero 22012, then a good query',
    modes: BOTH,
    async run(ctx) {
      const s = await ctx.connect('a');
      await s.query('selec 1');
      await s.query('select * from no_such_table_here');
      await s.query('select 1/0');
      await s.query("select 'still here' as ok");
    },
  },
  {
    name: 'errors: unique violation 23505 in a transaction, 25P02 after it, rollback',
    modes: BOTH,
    async run(ctx) {
      const s = await ctx.connect('a');
      await s.query('begin');
      await s.query(`insert into ${TABLE.unique} values (1)`);
      await s.query(`insert into ${TABLE.unique} values (1)`);
      await s.query('select 1');
      await s.query('commit');
      await s.query(`select count(*) from ${TABLE.unique}`);
    },
  },
  {
    name: 'errors: serialization failure 40001 (repeatable read, concurrent update)',
    modes: BOTH,
    async run(ctx) {
      const a = await ctx.connect('a');
      const b = await ctx.connect('b');
      await a.query('begin isolation level repeatable read');
      await a.query(`select count(*) from ${TABLE.serial}`);
      await b.query(`update ${TABLE.serial} set v = v + 1 where id = 1`);
      await a.query(`update ${TABLE.serial} set v = v + 1 where id = 1`);
      await a.query('rollback');
    },
  },
  {
    name: 'errors: statement_timeout 57014 (SET LOCAL in a transaction)',
    modes: BOTH,
    async run(ctx) {
      const s = await ctx.connect('a');
      await s.query("begin; set local statement_timeout = '20ms'");
      await s.query('select pg_sleep(10)');
      await s.query('rollback');
      await s.query('select 1');
    },
  },
  {
    name: 'errors: one simple Query with three statements, the second failing (implicit transaction)',
    modes: BOTH,
    async run(ctx) {
      const s = await ctx.connect('a');
      await s.query('select 1; select 1/0; select 2');
      await s.query('');
    },
  },
  {
    name: 'errors: ERROR inside BEGIN (status E), COMMIT answers ROLLBACK',
    modes: BOTH,
    async run(ctx) {
      const s = await ctx.connect('a');
      await s.query('begin');
      await s.query('select 1/0');
      await s.query('commit');
      await s.query('commit');
    },
  },

  // --- terminations ---------------------------------------------------------------------------
  {
    name: 'terminate: pg_terminate_backend while idle',
    modes: SESSION,
    async run(ctx) {
      const s = await ctx.connect('a');
      const pid = await s.value('select pg_backend_pid()');
      await ctx.admin.waitState(pid, 'idle');
      await ctx.admin.terminate(pid);
      await s.closing();
    },
  },
  {
    name: 'terminate: pg_terminate_backend mid-query',
    modes: BOTH,
    async run(ctx) {
      const s = await ctx.connect('a');
      // One extended-protocol sequence (one backend in transaction mode too): the process id is
      // flushed before the sleep starts.
      s.send(...unnamed('select pg_backend_pid()'), { type: 'Flush' });
      const pid = await s.flushedValue();
      s.send(...unnamed('select pg_sleep(30)'), { type: 'Sync' });
      await ctx.admin.waitSleeping(pid);
      await ctx.admin.terminate(pid);
      await s.closing();
    },
  },
  {
    name: 'terminate: pg_terminate_backend mid-transaction (idle in transaction)',
    modes: BOTH,
    async run(ctx) {
      const s = await ctx.connect('a');
      await s.query('begin');
      const pid = await s.value('select pg_backend_pid()');
      await ctx.admin.waitState(pid, 'idle in transaction');
      await ctx.admin.terminate(pid);
      await s.closing();
    },
  },

  // --- cancels --------------------------------------------------------------------------------
  {
    name: 'cancel: a running query (57014), then the session goes on',
    modes: BOTH,
    async run(ctx) {
      const s = await ctx.connect('a');
      await s.query('begin');
      const pid = await s.value('select pg_backend_pid()');
      const answered = s.ready + 1;
      s.send({ type: 'Query', query: 'select pg_sleep(30)' });
      await ctx.admin.waitSleeping(pid);
      await ctx.cancel(s);
      await s.until(() => s.ready >= answered, 'the canceled query\'s ReadyForQuery');
      await s.query('rollback');
      await s.query('select 1');
    },
  },
  {
    name: 'cancel: while idle (nothing happens)',
    modes: BOTH,
    async run(ctx) {
      const s = await ctx.connect('a');
      await s.query('select 1');
      await ctx.cancel(s);
      await s.query('select 2');
    },
  },

  // --- COPY -----------------------------------------------------------------------------------
  {
    name: 'copy: COPY TO STDOUT',
    modes: BOTH,
    async run(ctx) {
      const s = await ctx.connect('a');
      await s.query("copy (select g, 'row ' || g from generate_series(1, 3) g) to stdout");
    },
  },
  {
    name: 'copy: COPY FROM STDIN (data, CopyDone), in a transaction',
    modes: BOTH,
    async run(ctx) {
      const s = await ctx.connect('a');
      await s.query('begin');
      s.send({ type: 'Query', query: `copy ${TABLE.copy} from stdin` });
      await s.until(() => s.tokens.some((t) => t.startsWith('CopyInResponse')), 'CopyInResponse');
      s.send(copyData('1\tone\n'), copyData('2\ttwo\n'), { type: 'CopyDone' });
      await s.readies(1);
      await s.query(`select * from ${TABLE.copy} order by id`);
      await s.query('rollback');
    },
  },
  {
    name: 'copy: CopyFail (57014) and bad data (22P02)',
    modes: BOTH,
    async run(ctx) {
      const s = await ctx.connect('a');
      s.send({ type: 'Query', query: `copy ${TABLE.copy} from stdin` });
      await s.until(() => s.tokens.some((t) => t.startsWith('CopyInResponse')), 'CopyInResponse');
      s.send(copyData('1\tone\n'), { type: 'CopyFail', message: 'the client gave up' });
      await s.readies(1);
      s.send({ type: 'Query', query: `copy ${TABLE.copy} from stdin` });
      await s.until(() => s.tokens.filter((t) => t.startsWith('CopyInResponse')).length === 2, 'CopyInResponse');
      s.send(copyData('not a number\tx\n'), { type: 'CopyDone' });
      await s.readies(1);
      await s.query(`select count(*) from ${TABLE.copy}`);
    },
  },

  // --- notices and notifications --------------------------------------------------------------
  {
    name: 'notices: RAISE NOTICE and WARNING, and the server\'s own (COMMIT outside a transaction)',
    modes: BOTH,
    async run(ctx) {
      const s = await ctx.connect('a');
      await s.query("do $$ begin raise notice 'first notice'; raise warning 'a warning'; end $$");
      await s.query('commit');
      await s.query("set client_min_messages = 'error'; do $$ begin raise notice 'not shown'; end $$");
    },
  },
  {
    name: 'notifications: LISTEN, NOTIFY from another session and from itself',
    modes: BOTH,
    async run(ctx) {
      const a = await ctx.connect('a');
      const b = await ctx.connect('b');
      await a.query('listen differential');
      await b.query("notify differential, 'from b'");
      await a.until(() => a.tokens.some((t) => t.startsWith('NotificationResponse')), 'the notification');
      await a.query("notify differential, 'from a'");
      await a.query('unlisten differential');
      await b.query("notify differential, 'not heard'");
      await a.query('select 1');
    },
  },

  // --- early disconnects ----------------------------------------------------------------------
  {
    name: 'early disconnect: connect and hang up before any byte',
    modes: BOTH,
    async run(ctx) {
      const s = await ctx.open('a');
      s.hangUp();
      await s.closing();
    },
  },
  {
    name: 'early disconnect: Terminate before the StartupMessage (node-postgres end() at once)',
    modes: BOTH,
    async run(ctx) {
      const s = await ctx.open('a');
      s.send({ type: 'Terminate' });
      await s.closing();
    },
  },
  {
    name: 'early disconnect: half a StartupMessage, then hang up',
    modes: BOTH,
    async run(ctx) {
      const s = await ctx.open('a');
      s.sendBytes(Buffer.from([0, 0, 0, 40, 0, 3]));
      s.hangUp();
      await s.closing();
    },
  },
  {
    name: 'early disconnect: Terminate right after the startup',
    modes: BOTH,
    async run(ctx) {
      const s = await ctx.connect('a');
      await s.terminate();
    },
  },

  {
    name: 'early disconnect: a query and Terminate in one write (a client that does not wait)',
    modes: BOTH,
    async run(ctx) {
      const s = await ctx.connect('a');
      await s.query('begin'); // the backend is the client's now, in transaction mode too
      s.send({ type: 'Query', query: `insert into ${TABLE.unique} values (100) on conflict do nothing` }, { type: 'Query', query: 'commit' }, { type: 'Terminate' });
      s.hangUp();
      await s.closing();
      const check = await ctx.connect('check');
      await check.query(`delete from ${TABLE.unique} where id = 100`);
    },
  },

  {
    name: 'early disconnect: a query, then the client ends its side without Terminate (still reading)',
    modes: BOTH,
    async run(ctx) {
      const s = await ctx.connect('a');
      await s.query('begin'); // the backend is the client's now, in transaction mode too
      s.send({ type: 'Query', query: 'select pg_sleep(0.05), 1 as one' }, { type: 'Query', query: 'commit' });
      s.hangUp();
      await s.closing();
    },
  },

  // --- pipelining -----------------------------------------------------------------------------
  {
    name: 'pipelining: three simple Queries in one write, the second failing',
    modes: BOTH,
    async run(ctx) {
      const s = await ctx.connect('a');
      s.send({ type: 'Query', query: 'select 1 as a' }, { type: 'Query', query: 'select 1/0' }, { type: 'Query', query: 'select 3 as c' });
      await s.readies(3);
    },
  },
  {
    name: 'pipelining: BEGIN, statements and COMMIT in one write',
    modes: BOTH,
    async run(ctx) {
      const s = await ctx.connect('a');
      s.send(
        { type: 'Query', query: 'begin' },
        { type: 'Query', query: `insert into ${TABLE.unique} values (7)` },
        { type: 'Query', query: `select count(*) from ${TABLE.unique}` },
        { type: 'Query', query: 'rollback' },
      );
      await s.readies(4);
    },
  },

  // --- extended protocol ----------------------------------------------------------------------
  {
    name: 'extended: Parse/Bind/Describe/Execute/Sync (named statement, used twice, closed)',
    modes: BOTH,
    async run(ctx) {
      const s = await ctx.connect('a');
      s.send(
        { type: 'Parse', name: 's1', query: 'select $1::int + 1 as n, $2::text as t', parameterTypes: [] },
        { type: 'Describe', target: 'S', name: 's1' },
        { type: 'Bind', portal: '', statement: 's1', parameterFormats: [], parameters: [text('41'), text('x')], resultFormats: [] },
        { type: 'Describe', target: 'P', name: '' },
        { type: 'Execute', portal: '', maxRows: 0 },
        { type: 'Sync' },
      );
      await s.readies(1);
      s.send(...run('s1', ['1', null]), { type: 'Close', target: 'S', name: 's1' }, { type: 'Sync' });
      await s.readies(1);
      s.send({ type: 'Bind', portal: '', statement: 's1', parameterFormats: [], parameters: [text('1'), null], resultFormats: [] }, { type: 'Sync' });
      await s.readies(1);
    },
  },
  {
    name: 'extended: an error mid-pipeline skips to Sync, the next batch runs',
    modes: BOTH,
    async run(ctx) {
      const s = await ctx.connect('a');
      s.send(
        ...unnamed('select 10 / $1::int as q', ['5']),
        ...run('', ['0']),
        ...run('', ['2']),
        { type: 'Sync' },
        ...unnamed('selec 1'),
        { type: 'Sync' },
        ...unnamed('select 2 as two'),
        { type: 'Sync' },
      );
      await s.readies(3);
    },
  },
  {
    name: 'extended: Execute with a row limit (PortalSuspended), Flush before Sync',
    modes: BOTH,
    async run(ctx) {
      const s = await ctx.connect('a');
      s.send(
        { type: 'Parse', name: '', query: 'select g from generate_series(1, 5) g', parameterTypes: [] },
        { type: 'Bind', portal: 'p', statement: '', parameterFormats: [], parameters: [], resultFormats: [] },
        { type: 'Execute', portal: 'p', maxRows: 2 },
        { type: 'Flush' },
      );
      await s.until(() => s.tokens.includes('PortalSuspended'), 'PortalSuspended');
      s.send({ type: 'Execute', portal: 'p', maxRows: 0 }, { type: 'Sync' });
      await s.readies(1);
    },
  },
  {
    name: 'extended: a Parse error (42601) and an undefined table at Parse (42P01)',
    modes: BOTH,
    async run(ctx) {
      const s = await ctx.connect('a');
      s.send({ type: 'Parse', name: 'bad', query: 'selec $1', parameterTypes: [] }, { type: 'Sync' });
      await s.readies(1);
      s.send({ type: 'Parse', name: 'bad', query: 'select * from no_such_table_here', parameterTypes: [] }, { type: 'Describe', target: 'S', name: 'bad' }, { type: 'Sync' });
      await s.readies(1);
    },
  },

  // --- session state --------------------------------------------------------------------------
  {
    name: 'session state: SET, SHOW, RESET, and a named prepared statement across transactions',
    modes: BOTH,
    async run(ctx) {
      const s = await ctx.connect('a');
      await s.query("set work_mem = '8MB'");
      await s.query('show work_mem');
      s.send({ type: 'Parse', name: 'kept', query: 'select $1::int * 2 as d', parameterTypes: [] }, { type: 'Sync' });
      await s.readies(1);
      await s.query('begin; select 1; commit');
      s.send(...run('kept', ['21']), { type: 'Sync' });
      await s.readies(1);
      await s.query('reset work_mem; show work_mem');
    },
  },
  {
    name: 'session state: SET inside a transaction that rolls back (tracked and untracked)',
    modes: BOTH,
    async run(ctx) {
      const s = await ctx.connect('a', { application_name: 'before' });
      await s.query("begin; set application_name = 'inside'; set work_mem = '9MB'");
      await s.query('rollback');
      await s.query('show application_name; show work_mem');
      await s.query("set timezone = 'Asia/Tokyo'");
      await s.query('show timezone; show application_name');
    },
  },
  {
    name: 'session state: RESET and DISCARD ALL of a parameter set in the StartupMessage',
    modes: BOTH,
    async run(ctx) {
      const s = await ctx.connect('a', { application_name: 'from-startup' });
      await s.query("set application_name = 'later'");
      await s.query('reset application_name');
      await s.query('show application_name');
      await s.query("set application_name = 'later'");
      await s.query('discard all');
      await s.query('show application_name');
    },
  },
  {
    name: 'large messages: a 300 kB row, and a 300 kB query',
    modes: BOTH,
    async run(ctx) {
      const s = await ctx.connect('a');
      await s.query("select length(r), md5(r), r from (select repeat('quicpool', 37500) as r) x");
      await s.query(`select length('${'q'.repeat(300_000)}') as n`);
    },
  },
];
