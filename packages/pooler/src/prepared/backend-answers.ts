// The backend's side of the statement router, the first of its three classes (StatementRouter
// extends StatementPlacement, which extends this one): per attached backend, a queue of what each
// forwarded message will be answered with, and the backend's messages matched against it. Injected
// answers are swallowed, synthesized ones sent in their place, everything up to the next Sync is
// dropped after an ErrorResponse (ignore_till_sync), and the answers teach the pool's
// PreparedRegistry. What a dropped entry undoes (drop) and what a DEALLOCATE ALL / DISCARD ALL tag
// or an answered Sync group means for the client's statements (watchTag, releaseHeld) are the
// router's.
import type { PreparedRegistry } from './registry.js';
import type { ClientStatement, RouterSink } from './statement-router.js';
import { MessageType } from '@quicpool/wire';

/** What the client's forwarded message is answered with, at the end. */
export type Completion = 'parse' | 'bind' | 'describe' | 'execute' | 'close' | 'sync' | 'ready';

export interface Undo {
  /** A client name this message registered: forgotten when the message fails or is skipped. */
  readonly register?: string;
  /** A statement this message adds to the backend: unsure when it fails or is skipped. */
  readonly added?: string;
  /** A client Close: the statement comes back when the Close is skipped. */
  readonly reopen?: readonly [string, ClientStatement];
  /** A client Parse or Close of the unnamed statement: the state before it (see StatementRouter.unnamed). */
  readonly unnamedBefore?: { readonly parse: Buffer | null; readonly here: boolean };
}

export type Entry =
  /** `described`: the pooler name of a statement whose Describe this answers (its answer is kept). */
  | { readonly k: 'client'; readonly c: Completion; readonly undo?: Undo; readonly described?: string }
  | { readonly k: 'synth'; readonly bytes: Buffer; readonly undo?: Undo }
  | { readonly k: 'injectedParse'; readonly name: string; readonly quiet: boolean }
  | { readonly k: 'injectedClose'; readonly name: string }
  | { readonly k: 'injectedSync' };

/** Entries without undo data are immutable: one shared object per completion (none allocated per message). */
export const CLIENT_ENTRY: Readonly<Record<Completion, Entry>> = {
  parse: { k: 'client', c: 'parse' },
  bind: { k: 'client', c: 'bind' },
  describe: { k: 'client', c: 'describe' },
  execute: { k: 'client', c: 'execute' },
  close: { k: 'client', c: 'close' },
  sync: { k: 'client', c: 'sync' },
  ready: { k: 'client', c: 'ready' },
};

// Message types by their protocol names, as local constants (switches on them stay cheap).
const { ParseComplete, BindComplete, CloseComplete, NoData, RowDescription, ParameterDescription, CommandComplete, EmptyQueryResponse, PortalSuspended, ErrorResponse, ReadyForQuery } = MessageType;

export abstract class BackendAnswers {
  protected queue: Entry[] = [];
  protected head = 0;
  /** The backend saw an error and ignores everything until the next Sync, and no Sync is queued. */
  protected skipping = false;
  /** Syncs sent to the backend (this attachment), and Syncs answered. */
  protected groups = 0;
  protected resolved = 0;
  /** The statements the client's pool knows: what its backends accept is recorded there. */
  registry: PreparedRegistry | null = null;
  /** The ParameterDescription of the statement Describe being answered, until its row part comes. */
  private parameterDescription: Buffer | null = null;

  constructor(protected readonly sink: RouterSink) {}

  /** An entry the backend will never answer (`failed`, or skipped): undo what it did. */
  protected abstract drop(e: Entry, failed?: boolean): void;
  /** A Sync group was answered: forget what it decided, and route the messages that waited for it. */
  protected abstract releaseHeld(): void;
  /** A CommandComplete whose tag begins with D (DEALLOCATE ALL / DISCARD ALL forget every statement). */
  protected abstract watchTag(bytes: Buffer): void;

  /** A statement Describe is half answered (its ParameterDescription came, its row part not yet). */
  protected get describing(): boolean {
    return this.parameterDescription !== null;
  }

  /** A message from the attached backend. */
  backend(type: number, bytes: Buffer): void {
    const e = this.queue[this.head];
    switch (type) {
      case ParseComplete:
      case BindComplete:
      case CloseComplete:
        if (e !== undefined && (e.k === 'injectedParse' || e.k === 'injectedClose')) {
          if (e.k === 'injectedParse' && e.name !== '') this.registry?.learned(e.name);
          return this.complete();
        }
        if (type === ParseComplete && e?.k === 'client' && e.undo?.added !== undefined) this.registry?.learned(e.undo.added);
        this.sink.pass(type, bytes);
        return this.complete();
      case ParameterDescription:
        // Copied: the row part may come in a later read, into the same read buffer.
        if (e?.k === 'client' && e.described !== undefined) this.parameterDescription = Buffer.from(bytes);
        this.sink.pass(type, bytes);
        return;
      case NoData:
      case RowDescription:
        if (e?.k === 'client' && e.c === 'describe') {
          const p = this.parameterDescription;
          if (e.described !== undefined && p !== null) this.registry?.described(e.described, p, bytes);
          this.parameterDescription = null;
          this.sink.pass(type, bytes);
          return this.complete();
        }
        this.sink.pass(type, bytes);
        return;
      case CommandComplete:
      case EmptyQueryResponse:
      case PortalSuspended:
        if (type === CommandComplete && bytes[5] === 0x44 /* D */) this.watchTag(bytes);
        this.sink.pass(type, bytes);
        if (e?.k === 'client' && e.c === 'execute') this.complete();
        return;
      case ErrorResponse:
        if (e === undefined || e.k === 'injectedSync' || (e.k === 'client' && (e.c === 'sync' || e.c === 'ready'))) {
          this.sink.pass(type, bytes);
          return;
        }
        if (!(e.k === 'injectedParse' && e.quiet)) this.sink.pass(type, bytes);
        // A refused Parse: the statement is not known to work any more (dropped table ...).
        if (e.k === 'injectedParse' && e.name !== '') this.registry?.forget(e.name);
        else if (e.k === 'client' && e.c === 'parse' && e.undo?.added !== undefined) this.registry?.forget(e.undo.added);
        this.parameterDescription = null;
        return this.skipToSync(true);
      case ReadyForQuery:
        this.skipping = false;
        if (e?.k === 'injectedSync' || (e?.k === 'client' && e.c === 'sync')) this.resolved++;
        if (e?.k === 'injectedSync') {
          this.complete();
          return this.releaseHeld();
        }
        // Popped before the session sees it: a ReadyForQuery may release the backend.
        if (e?.k === 'client' && (e.c === 'sync' || e.c === 'ready')) this.head++;
        this.sink.pass(type, bytes);
        this.complete(0);
        return this.releaseHeld();
      default:
        // Rows, parameter descriptions, COPY data, notices, notifications, ParameterStatus.
        this.sink.pass(type, bytes);
        return;
    }
  }

  /**
   * The backend went into copy-in mode and ignores the last `n` Syncs the client sent (before its
   * CopyDone/CopyFail): they are answered by nothing, and the group after each joins the next.
   */
  syncsIgnored(n: number): void {
    for (let i = this.head + 1; i < this.queue.length && n > 0; ) {
      const e = this.queue[i]!;
      if (e.k === 'client' && e.c === 'sync') {
        this.queue.splice(i, 1);
        this.resolved++;
        n--;
      } else {
        i++;
      }
    }
  }

  /**
   * Would backend() do nothing with this message but pass it on (no answer completed, nothing
   * learned)? The message is `buffer[start, ...)`. Rows, notices and COPY data always; a
   * RowDescription that answers no Describe; a CommandComplete that ends no Execute and is no
   * DEALLOCATE or DISCARD.
   */
  passesThrough(type: number, buffer: Buffer, start: number): boolean {
    switch (type) {
      case ParseComplete:
      case BindComplete:
      case CloseComplete:
      case ParameterDescription:
      case NoData:
      case EmptyQueryResponse:
      case PortalSuspended:
      case ErrorResponse:
      case ReadyForQuery:
        return false;
      case RowDescription: {
        const e = this.queue[this.head];
        return !(e?.k === 'client' && e.c === 'describe');
      }
      case CommandComplete: {
        if (buffer[start + 5] === 0x44 /* D */) return false;
        const e = this.queue[this.head];
        return !(e?.k === 'client' && e.c === 'execute');
      }
      default:
        return true;
    }
  }

  protected push(e: Entry): void {
    if (this.skipping) return this.drop(e);
    if (e.k === 'synth' && this.head === this.queue.length) {
      this.sink.toClient(e.bytes);
      return;
    }
    this.queue.push(e);
  }

  /** The head entry is answered: pop it and send the synthesized answers that were waiting behind it. */
  protected complete(step = 1): void {
    this.head += step;
    for (let e = this.queue[this.head]; e !== undefined && e.k === 'synth'; e = this.queue[this.head]) {
      this.sink.toClient(e.bytes);
      this.head++;
    }
    this.compact();
  }

  /**
   * After an extended-protocol error: the backend ignores everything up to the next Sync. The
   * first entry dropped is the message that failed, the others were skipped.
   */
  private skipToSync(failed: boolean): void {
    const dropped: Entry[] = [];
    let synced = false;
    for (let e = this.queue[this.head]; e !== undefined; e = this.queue[this.head]) {
      if (dropped.length > 0 && (e.k === 'injectedSync' || (e.k === 'client' && e.c === 'sync'))) {
        synced = true;
        break;
      }
      dropped.push(e);
      this.head++;
    }
    this.skipping = !synced;
    // Undone newest first: a skipped Close may give back a name whose failed Parse is undone after.
    for (let i = dropped.length - 1; i >= 0; i--) this.drop(dropped[i]!, failed && i === 0);
    this.compact();
  }

  private compact(): void {
    if (this.head === this.queue.length) {
      // Emptied by pop (inlined) rather than `length = 0` (a call into V8's runtime): it holds a few.
      while (this.queue.length > 0) this.queue.pop();
      this.head = 0;
    } else if (this.head > 1024) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }
}
