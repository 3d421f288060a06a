// Writes to a stream are collected and flushed once per event-loop turn as ONE write: the many
// small messages of one backend chunk (or one client pipeline) leave in one syscall. Collecting
// them ourselves (instead of cork/uncork) skips the Writable's per-write bookkeeping and its
// writev path; measured with pgbench -S through the pooler, that is a large share of the JS cost
// per transaction. Large amounts are flushed at once instead of waiting for the turn to end.
import type { Writable } from 'node:stream';

/** Flush without waiting for the end of the turn once this much is collected. */
const FLUSH_AT = 256 * 1024;

export class BatchedWriter {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private scheduled = false;

  constructor(private readonly stream: Writable) {}

  /** False when the stream's buffer is full (the caller should stop its producer until 'drain'). */
  write(bytes: Buffer): boolean {
    if (this.stream.destroyed || this.stream.writableEnded) return true;
    this.pending.push(bytes);
    this.pendingBytes += bytes.length;
    if (this.pendingBytes >= FLUSH_AT) {
      this.flush();
    } else if (!this.scheduled) {
      this.scheduled = true;
      process.nextTick(this.flushAtTurnEnd);
    }
    return !this.stream.writableNeedDrain;
  }

  /** Writes whatever was collected now (before TLS, end() or destroy()). */
  flush(): void {
    const n = this.pending.length;
    if (n === 0) return;
    const chunk = n === 1 ? this.pending[0]! : Buffer.concat(this.pending, this.pendingBytes);
    this.pending = [];
    this.pendingBytes = 0;
    if (!this.stream.destroyed && !this.stream.writableEnded) this.stream.write(chunk);
  }

  private readonly flushAtTurnEnd = (): void => {
    this.scheduled = false;
    this.flush();
  };
}
