// Named prepared statements across backends in transaction pooling, without I/O.
//
// A client's named statement N gets a pooler-wide name P (hash of text, parameter types and
// search_path). P is prepared lazily on whichever backend the client holds, once per backend
// (BackendStatements, an LRU), and the client's Bind/Describe/Close of N are rewritten to P.
// Because the pooler adds and removes messages, it keeps, per attached backend, a queue of what
// each forwarded message will be answered with, so that
//  - the ParseComplete/CloseComplete of injected Parse/Close messages are swallowed,
//  - synthesized answers (ParseComplete for a statement the backend already has, CloseComplete
//    for a client Close, which never reaches the backend) are sent exactly where Postgres would
//    have sent them,
//  - after an ErrorResponse in the extended protocol everything up to the next Sync is dropped,
//    as the backend does (ignore_till_sync): client registrations and Closes are undone,
//    synthesized answers not sent, and statements whose injected Parse/Close was skipped become
//    "unsure" on that backend (closed and prepared again when next needed),
//  - a message of a later Sync group naming a client statement whose Parse/Close is in an earlier,
//    unanswered group is held back until that group's outcome is known.
// Unnamed portals are forwarded untouched (one queue entry each). So are unnamed statements,
// except that the router keeps the client's last unnamed Parse: a Bind or Describe of the unnamed
// statement on a backend where the client has not parsed it (pg8000 sends Parse+Sync,
// Describe+Sync, Bind/Execute+Sync, and the backend may change at each Sync) gets that Parse
// injected first (its ParseComplete swallowed), as Postgres keeps the statement until the next
// unnamed Parse, a simple Query or a Close of it. A client without one gets a Close of the
// backend's unnamed statement instead, so it never runs another client's (Postgres says 26000).
//
// The router is three classes, each extending the one before (no indirection per message): the
// queue and the backend's answers matched against it (backend-answers.ts), the pooler statements
// on the attached backend (statement-placement.ts), and here the client's messages and statements.
// Reading and writing a simple-query DEALLOCATE's text: deallocate.ts.
import { CLIENT_ENTRY } from './backend-answers.js';
import type { Completion, Entry } from './backend-answers.js';
import { DEALLOCATE_ONE, deallocateQuery, startsWithD } from './deallocate.js';
import type { BackendStatements } from './statement-cache.js';
import { StatementPlacement } from './statement-placement.js';
import {
  bindStatement,
  CLOSE_COMPLETE,
  commandTag,
  PARSE_COMPLETE,
  parseName,
  poolerName,
  renameBind,
  renameParse,
  statementTarget,
  SYNC,
  targetMessage,
} from './wire-names.js';
import { MessageType } from '@quicpool/wire';

export interface ClientStatement {
  readonly pooler: string;
  /** The client's Parse, renamed to `pooler` (a copy: it is kept for re-preparing). */
  readonly parse: Buffer;
}

/** Injected before a Bind/Describe of the unnamed statement on a backend that lacks the client's. */
const INJECTED_UNNAMED_PARSE: Entry = { k: 'injectedParse', name: '', quiet: false };
const INJECTED_UNNAMED_CLOSE: Entry = { k: 'injectedClose', name: '' };
const CLOSE_UNNAMED = targetMessage(MessageType.Close, '');

export interface RouterSink {
  toBackend(bytes: Buffer): void;
  /** A synthesized answer for the client. */
  toClient(bytes: Buffer): void;
  /** A backend message that answers the client: the session forwards it (ReadyForQuery logic etc.). */
  pass(type: number, bytes: Buffer): void;
  /** The backend skipped a Query/FunctionCall (error before Sync): its ReadyForQuery will not come. */
  readyDropped(): void;
}

// Message types by their protocol names, as local constants (switches on them stay cheap).
const { Query, Sync, Execute, FunctionCall, Flush, Parse, Bind, Describe, Close } = MessageType;

export class StatementRouter extends StatementPlacement {
  private readonly statements = new Map<string, ClientStatement>();
  /** Extended-protocol messages were forwarded since the last Sync. */
  private midExtended = false;
  /** The Sync group in which a client name was last registered or closed, until that group is answered. */
  private readonly nameGroup = new Map<string, number>();
  /**
   * Client messages held back: they name a statement whose Parse/Close is in an earlier Sync group
   * not answered yet, so whether it exists depends on that group's fate. Routed once it is known.
   */
  private held: { readonly type: number; readonly bytes: Buffer; readonly scope: string }[] = [];
  /** The client's unnamed statement (its Parse, copied), null when it has none (see the top). */
  private unnamed: Buffer | null = null;
  /** The attached backend's unnamed statement is the client's (or is gone, when the client has none). */
  private unnamedHere = false;
  /** The entry of an unnamed Parse that repeats `unnamed` where it is (one object while the text stays the same). */
  private unnamedAgain: Entry | null = null;
  /** The Sync group of the last message that changed the unnamed statement, until it is answered (-1: none). */
  private unnamedGroup = -1;

  /** The client's statement of that name, if it has one. */
  statement(name: string): ClientStatement | undefined {
    return this.statements.get(name);
  }

  /** No backend attached: the client prepared `name` and the pooler answered it (idle-answers.ts). */
  adopt(name: string, stmt: ClientStatement): void {
    this.statements.set(name, stmt);
  }

  /** The client's named statements (for tests and stats). */
  get statementCount(): number {
    return this.statements.size;
  }

  /** Answers still owed by the backend, or synthesized ones waiting for them. */
  get pending(): number {
    return this.queue.length - this.head + this.held.length;
  }

  attach(cache: BackendStatements): void {
    this.cache = cache;
    this.clearQueues();
    this.skipping = false;
    this.midExtended = false;
    this.unnamedHere = false;
    this.unnamedGroup = -1;
    this.groups = 0;
    this.resolved = 0;
    // Map.clear() allocates a new table even for an empty map: only when there is something to clear.
    if (this.lastGroup.size > 0) this.lastGroup.clear();
    if (this.nameGroup.size > 0) this.nameGroup.clear();
  }

  /** The backend goes back to the pool; `reset`: it will be reset (DISCARD ALL), its statements go. */
  detach(reset: boolean): void {
    if (reset) this.cache?.clear();
    this.cache = null;
    this.clearQueues();
  }

  /** Empties the answer queue and the held messages, reusing the arrays. */
  private clearQueues(): void {
    // Emptied by pop (inlined) rather than `length = 0` (a call into V8's runtime): they hold a few.
    while (this.queue.length > 0) this.queue.pop();
    this.head = 0;
    while (this.held.length > 0) this.held.pop();
  }

  /**
   * The plain lane (driver/plain-lane.md): a simple Query that is no DEALLOCATE, on a backend just
   * attached. What client(Query) does then, except sending it: the driver writes it.
   */
  plainQuery(): void {
    this.unnamed = null;
    this.unnamedHere = true;
    this.queue.push(CLIENT_ENTRY.ready);
  }

  /** The plain lane: the one answer owed is a simple Query's, and nothing is held, skipped or undecided. */
  get plainAnswerNext(): boolean {
    return this.queue.length - this.head === 1 && this.queue[this.head] === CLIENT_ENTRY.ready && this.held.length === 0 && !this.skipping && this.nameGroup.size === 0 && this.unnamedGroup < 0 && !this.describing;
  }

  /** A client message for the attached backend. `scope` is the client's search_path. */
  client(type: number, bytes: Buffer, scope: string): void {
    const unnamedOpen = this.unnamedGroup >= 0 && this.unnamedGroup < this.groups;
    if (this.held.length > 0 || ((this.nameGroup.size > 0 || unnamedOpen) && this.ambiguous(type, bytes))) {
      this.held.push({ type, bytes: Buffer.from(bytes), scope });
      return;
    }
    this.route(type, bytes, scope);
  }

  private route(type: number, bytes: Buffer, scope: string): void {
    switch (type) {
      case Parse:
        this.midExtended = true;
        return this.onParse(bytes, scope);
      case Bind: {
        this.midExtended = true;
        const s = bindStatement(bytes);
        if (s.name === '') {
          if (!this.unnamedHere) this.ensureUnnamed();
          return this.pass(bytes, 'bind');
        }
        const stmt = this.statements.get(s.name);
        if (stmt === undefined) return this.pass(bytes, 'bind');
        this.ensure(stmt);
        return this.pass(renameBind(bytes, s.start, s.end, stmt.pooler), 'bind');
      }
      case Describe: {
        this.midExtended = true;
        const name = statementTarget(bytes);
        if (name === '' && !this.unnamedHere) this.ensureUnnamed();
        const stmt = name === undefined || name === '' ? undefined : this.statements.get(name);
        if (stmt === undefined) return this.pass(bytes, 'describe');
        this.ensure(stmt);
        this.sink.toBackend(targetMessage(Describe, stmt.pooler));
        return this.push({ k: 'client', c: 'describe', described: stmt.pooler });
      }
      case Close: {
        this.midExtended = true;
        const name = statementTarget(bytes);
        if (name === '') return this.onUnnamed(null, bytes, 'close');
        const stmt = name === undefined ? undefined : this.statements.get(name);
        if (name === undefined || stmt === undefined) return this.pass(bytes, 'close');
        if (this.skipping) return; // the backend would ignore it: so does the pooler
        // The statement stays on the backend (other clients may share it); only the client forgets it.
        this.statements.delete(name);
        this.nameGroup.set(name, this.groups);
        return this.push({ k: 'synth', bytes: CLOSE_COMPLETE, undo: { reopen: [name, stmt] } });
      }
      case Execute:
        this.midExtended = true;
        return this.pass(bytes, 'execute');
      case Sync:
        this.midExtended = false;
        this.sink.toBackend(bytes);
        this.skipping = false;
        this.groups++;
        return this.push(CLIENT_ENTRY.sync);
      case Query:
        // A simple Query destroys the unnamed statement, the client's and the backend's alike.
        if (!this.skipping) {
          this.unnamed = null;
          this.unnamedHere = true;
        }
        return this.pass(this.midExtended ? bytes : this.rewriteDeallocate(bytes), 'ready');
      case FunctionCall:
        return this.pass(bytes, 'ready');
      case Flush:
        this.midExtended = true;
        this.sink.toBackend(bytes);
        return;
      default:
        // CopyData, CopyDone, CopyFail: answered as part of the COPY's Execute or Query.
        this.sink.toBackend(bytes);
        return;
    }
  }

  private onParse(bytes: Buffer, scope: string): void {
    const { name, restStart } = parseName(bytes);
    if (name === '') return this.onUnnamed(bytes, bytes, 'parse');
    const existing = this.statements.get(name);
    if (existing !== undefined) {
      // Postgres answers 42P05 (already exists): let the backend say so, for the pooler's name.
      this.ensure(existing);
      return this.pass(renameParse(bytes, restStart, existing.pooler), 'parse');
    }
    if (this.skipping || this.cache === null) return this.sink.toBackend(bytes); // ignored by the backend
    const pooler = poolerName(bytes.subarray(restStart), scope);
    const stmt: ClientStatement = { pooler, parse: renameParse(bytes, restStart, pooler) };
    this.statements.set(name, stmt);
    this.nameGroup.set(name, this.groups);
    const state = this.stateOf(pooler);
    if (state === 'present') {
      this.cache.touch(pooler);
      return this.push({ k: 'synth', bytes: PARSE_COMPLETE, undo: { register: name } });
    }
    this.closeEvicted(this.cache.add(pooler));
    if (state === 'unsure') this.injectClose(pooler);
    this.touched(pooler);
    this.sink.toBackend(stmt.parse);
    this.push({ k: 'client', c: 'parse', undo: { register: name, added: pooler } });
  }

  /**
   * A client Parse of the unnamed statement (`parse`: its bytes) or Close of it (`parse` null): the
   * client's unnamed statement is now that one (or none), and so is the backend's. A later Sync
   * group that names the unnamed statement waits (held) until this one's outcome is known.
   */
  private onUnnamed(parse: Buffer | null, bytes: Buffer, c: 'parse' | 'close'): void {
    this.midExtended = true;
    this.sink.toBackend(bytes);
    if (this.skipping) return this.drop(CLIENT_ENTRY[c]); // ignored by the backend: nothing changes
    this.unnamedGroup = this.groups;
    const before = this.unnamed;
    const here = this.unnamedHere;
    this.unnamedHere = true;
    if (parse !== null && here && before !== null && before.equals(parse)) {
      // The same statement again where it is already (a driver's every query): no copy, no entry.
      return this.push((this.unnamedAgain ??= { k: 'client', c, undo: { unnamedBefore: { parse: before, here: true } } }));
    }
    this.unnamed = parse === null ? null : Buffer.from(parse);
    this.unnamedAgain = null;
    this.push({ k: 'client', c, undo: { unnamedBefore: { parse: before, here } } });
  }

  /** A Bind/Describe of the unnamed statement on a backend where it is not the client's. */
  private ensureUnnamed(): void {
    if (this.skipping || this.cache === null) return;
    this.unnamedHere = true;
    this.unnamedGroup = this.groups;
    const parse = this.unnamed;
    if (parse !== null) {
      this.sink.toBackend(parse);
      this.push(INJECTED_UNNAMED_PARSE);
    } else {
      this.sink.toBackend(CLOSE_UNNAMED);
      this.push(INJECTED_UNNAMED_CLOSE);
    }
  }

  /** Does this message name a client statement whose registration or Close is still undecided? */
  private ambiguous(type: number, bytes: Buffer): boolean {
    let name: string | undefined;
    if (type === Parse) name = parseName(bytes).name;
    else if (type === Bind) name = bindStatement(bytes).name;
    else if (type === Describe || type === Close) name = statementTarget(bytes);
    else return false;
    const g = name === undefined ? undefined : name === '' ? this.unnamedGroup : this.nameGroup.get(name);
    return g !== undefined && g >= 0 && g < this.groups && g >= this.resolved;
  }

  /** A Sync group was answered: forget what it decided, and route the messages that waited for it. */
  protected override releaseHeld(): void {
    for (const [name, g] of this.nameGroup) if (g < this.resolved) this.nameGroup.delete(name);
    if (this.unnamedGroup >= 0 && this.unnamedGroup < this.resolved) this.unnamedGroup = -1;
    while (this.held.length > 0) {
      const m = this.held[0]!;
      if (this.ambiguous(m.type, m.bytes)) return;
      this.held.shift();
      this.route(m.type, m.bytes, m.scope);
    }
  }

  private pass(bytes: Buffer, c: Completion): void {
    this.sink.toBackend(bytes);
    this.push(CLIENT_ENTRY[c]);
  }

  /** An entry the backend will never answer (`failed`, or skipped): undo what it did. */
  protected override drop(e: Entry, failed = false): void {
    switch (e.k) {
      case 'client':
      case 'synth': {
        const u = e.undo;
        if (u?.register !== undefined) this.statements.delete(u.register);
        if (u?.added !== undefined) this.unsure(u.added);
        if (u?.reopen !== undefined) this.statements.set(u.reopen[0], u.reopen[1]);
        const b = u?.unnamedBefore;
        if (b !== undefined) {
          // A failed unnamed Parse leaves no unnamed statement (Postgres drops the old one first);
          // a skipped one leaves things as they were. (Undone newest first, so `b` is current.)
          this.unnamed = failed ? null : b.parse;
          this.unnamedHere = failed || b.here;
          this.unnamedAgain = null;
        }
        if (e.k === 'client' && e.c === 'ready') this.sink.readyDropped();
        return;
      }
      case 'injectedParse':
      case 'injectedClose':
        if (e.name === '') this.unnamedHere = false;
        else this.unsure(e.name);
        return;
      case 'injectedSync':
        return;
      default: {
        const never: never = e;
        throw new Error(`unhandled entry ${JSON.stringify(never)}`);
      }
    }
  }

  /** DEALLOCATE ALL / DISCARD ALL succeeded: every statement on this backend is gone. */
  protected override watchTag(bytes: Buffer): void {
    const tag = commandTag(bytes);
    if (tag !== 'DEALLOCATE ALL' && tag !== 'DISCARD ALL') return;
    this.statements.clear();
    this.cache?.clear();
    this.lastGroup.clear();
  }

  /**
   * `DEALLOCATE name` of a protocol-level statement: the client forgets it, and the query runs as
   * `DEALLOCATE <pooler name>` (prepared first if the backend lacks it, with its own swallowed Sync),
   * so the client gets Postgres's own answer (tag, or an error in an aborted transaction).
   */
  private rewriteDeallocate(bytes: Buffer): Buffer {
    if (bytes.length > 1024 || this.skipping || this.cache === null || !startsWithD(bytes)) return bytes;
    const m = DEALLOCATE_ONE.exec(bytes.toString('utf8', 5, bytes.length - 1));
    if (m === null) return bytes;
    const name = m[1] !== undefined ? m[1].replaceAll('""', '"') : (m[2] ?? '').toLowerCase();
    const stmt = this.statements.get(name);
    if (stmt === undefined) return bytes;
    this.statements.delete(name);
    this.nameGroup.set(name, this.groups);
    if (this.stateOf(stmt.pooler) !== 'present') {
      this.ensure(stmt, true);
      this.sink.toBackend(SYNC);
      this.groups++;
      this.push({ k: 'injectedSync' });
    }
    this.touched(stmt.pooler);
    this.cache.delete(stmt.pooler);
    return deallocateQuery(stmt.pooler);
  }
}
