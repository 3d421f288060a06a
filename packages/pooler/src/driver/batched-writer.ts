// Writes to a stream are collected and flushed once per event-loop turn as ONE write: the many
// small messages of one backend chunk (or one client pipeline) leave in one syscall. Collecting
// them ourselves (instead of cork/uncork) skips the Writable's per-write bookkeeping and its
// writev path; measured with pgbench -S through the pooler, that is a large share of the JS cost
// per transaction. Large amounts are flushed at once instead of waiting for the turn to end.
// Messages that lie next to each other in memory (the views of one received chunk that the
// pooler forwards, e.g. a server's RowDescription, DataRows, CommandComplete and ReadyForQuery)
// are written as one view of that memory: no Buffer.concat, no copy.
//
// Every writer with something collected is flushed by one shared end-of-turn callback, or earlier
// by flushAll() (a server read flushes before returning, to know whether its read buffer may be
// reused: see backend/socket-input.ts). A flush "keeps" its bytes when the stream says it may still
// hold them (`SessionStream.holdsWrittenBytes`: a TLS socket, a memory stream, a backlog, a QUIC
// write quiche could not take whole).
import net from 'node:net';
import type { Writable } from 'node:stream';
import tls from 'node:tls';
import type { SessionStream } from '@quicpool/transport';

/** Flush without waiting for the end of the turn once this much is collected. */
const FLUSH_AT = 256 * 1024;

/** Writers with something collected (each once), flushed together. */
const dirty: BatchedWriter[] = [];
let flushScheduled = false;
/** A flush since beginCycle() may have left its bytes referenced by the stream. */
let kept = false;

function flushDirty(): void {
  flushScheduled = false;
  // Index loop: a flush does not add writers, but stay correct if one ever does.
  for (let i = 0; i < dirty.length; i++) {
    const w = dirty[i]!;
    w.queued = false;
    w.flush();
  }
  dirty.length = 0;
}

export class BatchedWriter {
  private readonly pending: Buffer[] = [];
  private pendingBytes = 0;
  /** In the `dirty` list. */
  queued = false;
  /** Whether the stream may still reference what was written to it. */
  private readonly holds: () => boolean;

  constructor(private readonly stream: Writable) {
    const session = stream as Writable & Partial<Pick<SessionStream, 'holdsWrittenBytes'>>;
    if (typeof session.holdsWrittenBytes === 'function') {
      this.holds = () => session.holdsWrittenBytes!();
    } else {
      // A server connection's raw socket: plain TCP releases a write it completed at once.
      const plainTcp = stream instanceof net.Socket && !(stream instanceof tls.TLSSocket);
      this.holds = plainTcp ? () => stream.writableLength > 0 : () => true;
    }
  }

  /**
   * The last collected piece: `runFirst` (the first buffer of it) extended by the buffers that
   * followed it directly in the same memory, `runLength` bytes in all. Null when none.
   */
  private runFirst: Buffer | null = null;
  private runLength = 0;

  /** Starts watching whether flushes keep their bytes referenced (see flushAll). */
  static beginCycle(): void {
    kept = false;
  }

  /** Flushes every writer now; true when no flush since beginCycle() left its bytes referenced. */
  static flushAll(): boolean {
    if (dirty.length > 0) flushDirty();
    return !kept;
  }

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
      dirty.push(this);
      if (!flushScheduled) {
        flushScheduled = true;
        process.nextTick(flushDirty);
      }
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
    this.stream.write(chunk);
    if (this.holds()) kept = true;
  }

  /** The run as one Buffer: its first buffer itself when nothing was appended, else a view spanning it. */
  private closeRun(run: Buffer): Buffer {
    return this.runLength === run.length ? run : Buffer.from(run.buffer, run.byteOffset, this.runLength);
  }
}
