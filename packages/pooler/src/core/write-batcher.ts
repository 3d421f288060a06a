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

/** Flush without waiting for the end of the turn once this much is collected. */
const FLUSH_AT = 256 * 1024;
/** A view no larger than this is copied for a stream that keeps its writes (see flush). */
const COPY_AT_MOST = 16 * 1024;

/**
 * The writers of one pooler with something collected, flushed together once per turn (or at once
 * by flushAll). Each pooler owns one: two poolers in a process never flush each other's writers.
 */
export class WriteBatcher {
  /** Writers with something collected (each once). */
  private readonly dirty: BatchedWriter[] = [];
  private scheduled = false;
  /** Read cycles under way (see beginCycle); writes collected meanwhile wait for the outermost end. */
  private depth = 0;
  /** A flush since the outermost beginCycle() may have left its bytes referenced by the stream. */
  kept = false;

  /** A writer for `stream` that collects through this batcher. */
  writer(stream: Writable): BatchedWriter {
    return new BatchedWriter(this, stream);
  }

  /**
   * A read's handling starts: what it writes is flushed by the matching endCycle() (call it in a
   * `finally`), not at the end of the turn. Cycles nest; the outermost end flushes.
   */
  beginCycle(): void {
    if (this.depth++ === 0) this.kept = false;
  }

  /**
   * Ends a cycle; the outermost flushes every writer. True when no flush since the outermost
   * beginCycle() left its bytes referenced by a stream.
   */
  endCycle(): boolean {
    if (--this.depth === 0 && this.dirty.length > 0) this.flushDirty();
    return !this.kept;
  }

  /** Flushes every writer now (outside a read: an auth lookup that resumed a session). */
  flushAll(): void {
    if (this.dirty.length > 0) this.flushDirty();
  }

  /** `w` has something collected: flush it at the end of this cycle, or of this turn. */
  enqueue(w: BatchedWriter): void {
    this.dirty.push(w);
    if (this.depth === 0 && !this.scheduled) {
      this.scheduled = true;
      process.nextTick(this.flushDirty);
    }
  }

  private readonly flushDirty = (): void => {
    this.scheduled = false;
    // Index loop: a flush does not add writers, but stay correct if one ever does.
    for (let i = 0; i < this.dirty.length; i++) {
      const w = this.dirty[i]!;
      w.queued = false;
      w.flush();
    }
    this.dirty.length = 0;
  };
}

export class BatchedWriter {
  private readonly pending: Buffer[] = [];
  private pendingBytes = 0;
  /** In the batcher's dirty list. */
  queued = false;
  /** Whether the stream may still reference what was written to it. */
  private readonly holds: () => boolean;
  /** The stream's cheapest write (SessionStream.writeChunk where it has one). */
  private readonly put: (chunk: Buffer) => void;

  constructor(
    private readonly batcher: WriteBatcher,
    private readonly stream: Writable,
  ) {
    const session = stream as Writable & Partial<Pick<SessionStream, 'holdsWrittenBytes' | 'writeChunk'>>;
    this.holds = typeof session.holdsWrittenBytes === 'function' ? () => session.holdsWrittenBytes!() : () => true;
    this.put = typeof session.writeChunk === 'function' ? (chunk) => void session.writeChunk!(chunk) : (chunk) => void stream.write(chunk);
  }

  /**
   * The last collected piece: `runFirst` (the first buffer of it) extended by the buffers that
   * followed it directly in the same memory, `runLength` bytes in all. Null when none.
   */
  private runFirst: Buffer | null = null;
  private runLength = 0;

  /** False when the stream's buffer is full (the caller should stop its producer until 'drain'). */
  write(bytes: Buffer): boolean {
    if (this.stream.destroyed || this.stream.writableEnded) return true;
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
    return !this.stream.writableNeedDrain;
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
    }
    this.pending.length = 0; // reused: no array per flush
    this.pendingBytes = 0;
    if (this.stream.destroyed || this.stream.writableEnded) return;
    // A view of memory the caller may reuse (a server's read buffer), going to a stream that keeps
    // what it is given (TLS, a backlog): a small one is copied, so the read buffer stays reusable
    // instead of the next read costing a new one (at 1,000 answers/s to TLS clients that was 64 MB/s
    // of ArrayBuffers, and a full GC every second).
    if (n === 0 && chunk.length <= COPY_AT_MOST && this.holds()) {
      this.put(Buffer.from(chunk));
      return;
    }
    this.put(chunk);
    if (n === 0 && this.holds()) this.batcher.kept = true;
  }

  /** The run as one Buffer: its first buffer itself when nothing was appended, else a view spanning it. */
  private closeRun(run: Buffer): Buffer {
    return this.runLength === run.length ? run : Buffer.from(run.buffer, run.byteOffset, this.runLength);
  }
}
