// Writes to a stream are collected and flushed once per event-loop turn as ONE write: the many
// small messages of one backend chunk (or one client pipeline) leave in one syscall. Collecting
// them ourselves (instead of cork/uncork) skips the Writable's per-write bookkeeping and its
// writev path; measured with pgbench -S through the pooler, that is a large share of the JS cost
// per transaction. Large amounts are flushed at once instead of waiting for the turn to end.
// Messages that lie next to each other in memory (the views of one received chunk that the
// pooler forwards, e.g. a server's RowDescription, DataRows, CommandComplete and ReadyForQuery)
// are written as one view of that memory: no Buffer.concat, no copy.
//
// Every writer of a pooler with something collected is flushed by its batcher's one end-of-turn
// callback, or at the end of a read cycle: a socket read is handled between beginCycle() and
// endCycle(), which flushes what the read caused before returning (a server read must know whether
// its read buffer may be reused: see backend/socket-input.ts) and so needs no end-of-turn tick
// (each tick costs Node a second call into JavaScript per read). A stream may hold what it is given
// (`SessionStream.holdsWrittenBytes`: a TLS socket, a memory stream, a backlog, a QUIC write quiche
// could not take whole): a small view then goes out as a copy, a large one "keeps" its bytes (the
// read buffer it views is not reused).
import type { Writable } from 'node:stream';
import type { SessionStream } from '@quicpool/transport';
import type { CycleClock } from './clock.js';

/** Flush without waiting for the end of the turn once this much is collected. */
const FLUSH_AT = 256 * 1024;
/** A view no larger than this is copied for a stream that keeps its writes (see flush). */
const COPY_AT_MOST = 16 * 1024;

/**
 * The writers of one pooler with something collected, flushed together once per turn (or at once
 * by flushAll). Each pooler owns one: two poolers in a process never flush each other's writers.
 */
export class WriteBatcher {
  /**
   * Writers with something collected (each once): `dirty[0, dirtyCount)`. A count instead of
   * `length = 0` after each flush (setting an array's length is a call into V8's runtime); slots
   * are cleared as they are flushed, so nothing stays referenced.
   */
  private readonly dirty: (BatchedWriter | null)[] = [];
  private dirtyCount = 0;
  private scheduled = false;
  /** Read cycles under way (see beginCycle); writes collected meanwhile wait for the outermost end. */
  private depth = 0;
  /** A flush since the outermost beginCycle() may have left its bytes referenced by the stream. */
  kept = false;

  /** `clock`, when given, is read once per read cycle (see CycleClock). */
  constructor(private readonly clock: CycleClock | null = null) {}

  /** A writer for `stream` that collects through this batcher. */
  writer(stream: Writable): BatchedWriter {
    return new BatchedWriter(this, stream);
  }

  /**
   * A read's handling starts: what it writes is flushed by the matching endCycle() (call it in a
   * `finally`), not at the end of the turn. Cycles nest; the outermost end flushes.
   */
  beginCycle(): void {
    if (this.depth++ === 0) {
      this.kept = false;
      this.clock?.beginCycle();
    }
  }

  /**
   * Ends a cycle; the outermost flushes every writer. True when no flush since the outermost
   * beginCycle() left its bytes referenced by a stream.
   */
  endCycle(): boolean {
    if (--this.depth === 0) {
      if (this.dirtyCount > 0) this.flushDirty();
      this.clock?.endCycle();
    }
    return !this.kept;
  }

  /** Flushes every writer now (outside a read: an auth lookup that resumed a session). */
  flushAll(): void {
    if (this.dirtyCount > 0) this.flushDirty();
  }

  /** `w` has something collected: flush it at the end of this cycle, or of this turn. */
  enqueue(w: BatchedWriter): void {
    this.dirty[this.dirtyCount++] = w;
    if (this.depth === 0 && !this.scheduled) {
      this.scheduled = true;
      process.nextTick(this.flushDirty);
    }
  }

  private readonly flushDirty = (): void => {
    this.scheduled = false;
    // Index loop: a flush does not add writers, but stay correct if one ever does.
    for (let i = 0; i < this.dirtyCount; i++) {
      const w = this.dirty[i]!;
      this.dirty[i] = null;
      w.queued = false;
      w.flush();
    }
    this.dirtyCount = 0;
  };
}

/** A stream as the writer sees it: a Writable, maybe with SessionStream's cheaper write and its holds answer. */
type ChunkStream = Writable & Partial<Pick<SessionStream, 'holdsWrittenBytes' | 'writeChunk'>>;

export class BatchedWriter {
  private readonly pending: Buffer[] = [];
  private pendingBytes = 0;
  /** In the batcher's dirty list. */
  queued = false;
  /** The stream said it is full (a write returned false) and has not emitted 'drain' since. */
  private full = false;
  /** end() was called: what is written later is dropped. */
  private ended = false;
  /**
   * The stream's own methods are called on it, not through closures of ours: a flush touches each
   * writer once per transaction, cold in cache, and every hop is a dependent load.
   */
  private readonly stream: ChunkStream;
  /** The stream says whether it still references what was written to it (else assume it does). */
  private readonly tellsHolds: boolean;
  /** The stream has a cheaper write than write() (SessionStream.writeChunk). */
  private readonly chunked: boolean;

  constructor(
    private readonly batcher: WriteBatcher,
    stream: Writable,
  ) {
    const s = stream as ChunkStream;
    this.stream = s;
    this.tellsHolds = typeof s.holdsWrittenBytes === 'function';
    this.chunked = typeof s.writeChunk === 'function';
  }

  /**
   * The last collected piece: `runFirst` (the first buffer of it) extended by the buffers that
   * followed it directly in the same memory, `runLength` bytes in all. Null when none.
   */
  private runFirst: Buffer | null = null;
  private runLength = 0;

  /**
   * False while the stream's buffer is full (the caller should stop its producer until 'drain').
   * Collecting asks nothing of the stream (a Writable's state getters cost more than the write
   * itself); the stream's answer comes from the flush, as `full`.
   */
  write(bytes: Buffer): boolean {
    const run = this.runFirst;
    if (run !== null && run.buffer === bytes.buffer && run.byteOffset + this.runLength === bytes.byteOffset) {
      this.runLength += bytes.length;
    } else {
      if (run !== null) this.pending.push(this.closeRun(run));
      this.runFirst = bytes;
      this.runLength = bytes.length;
    }
    this.pendingBytes += bytes.length;
    if (this.pendingBytes >= FLUSH_AT) {
      this.flush();
    } else if (!this.queued) {
      this.queued = true;
      this.batcher.enqueue(this);
    }
    return !this.full;
  }

  /**
   * `bytes` leave now, as write() and flush() would send them (after anything collected), without
   * waiting for the end of the cycle (the plain lane: one write per stream and read anyway).
   */
  writeNow(bytes: Buffer): boolean {
    if (this.runFirst !== null || this.ended) {
      this.write(bytes);
      this.flush();
      return !this.full;
    }
    this.send(bytes, true);
    return !this.full;
  }

  /** Writes whatever was collected now (before TLS, end() or destroy()). */
  flush(): void {
    const run = this.runFirst;
    if (run === null) return;
    this.runFirst = null;
    const last = this.closeRun(run);
    const n = this.pending.length;
    let chunk = last;
    if (n > 0) {
      this.pending.push(last);
      chunk = Buffer.concat(this.pending, this.pendingBytes);
      this.pending.length = 0; // reused: no array per flush
    }
    this.pendingBytes = 0;
    // A destroyed stream drops what it is given; an ended one would fail the write with an error
    // (the pooler ends its streams through end() below, so this needs no Writable getter).
    if (this.ended) return;
    this.send(chunk, n === 0);
  }

  /**
   * `chunk` to the stream. `callers`: it is a caller's buffer (maybe a view of memory the caller
   * reuses, a server's read buffer), not a concatenation of ours. Such a view going to a stream
   * that keeps what it is given (TLS, a backlog) is copied when small, so the read buffer stays
   * reusable instead of the next read costing a new one (at 1,000 answers/s to TLS clients that
   * was 64 MB/s of ArrayBuffers, and a full GC every second); a large one keeps its bytes.
   */
  private send(chunk: Buffer, callers: boolean): void {
    if (callers && chunk.length <= COPY_AT_MOST && this.holds()) {
      this.accepted(this.put(Buffer.from(chunk)));
      return;
    }
    this.accepted(this.put(chunk));
    if (callers && this.holds()) this.batcher.kept = true;
  }

  /** Whether the stream may still reference what was written to it. */
  private holds(): boolean {
    return !this.tellsHolds || this.stream.holdsWrittenBytes!();
  }

  /** The stream's cheapest write. */
  private put(chunk: Buffer): boolean {
    return this.chunked ? this.stream.writeChunk!(chunk) : this.stream.write(chunk);
  }

  /**
   * Writes what was collected, then ends the stream (with `last`, if given): every stream the
   * pooler writes through a writer is ended this way, so nothing collected can follow the end.
   */
  end(last?: Buffer): void {
    this.flush();
    this.ended = true;
    if (last === undefined) this.stream.end();
    else this.stream.end(last);
  }

  /** The stream's answer to a write: false means full until it emits 'drain'. */
  private accepted(more: boolean): void {
    if (more || this.full) return;
    this.full = true;
    this.stream.once('drain', this.drained);
  }

  private readonly drained = (): void => {
    this.full = false;
  };

  /** The run as one Buffer: its first buffer itself when nothing was appended, else a view spanning it. */
  private closeRun(run: Buffer): Buffer {
    return this.runLength === run.length ? run : Buffer.from(run.buffer, run.byteOffset, this.runLength);
  }
}
