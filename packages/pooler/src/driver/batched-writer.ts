// Writes to a stream are corked and flushed once per event-loop turn, so the many small messages
// of one backend chunk (or one client pipeline) leave in one writev instead of one syscall each.
import type { Writable } from 'node:stream';

export class BatchedWriter {
  private corked = false;

  constructor(private readonly stream: Writable) {}

  /** False when the stream's buffer is full (the caller should stop its producer until 'drain'). */
  write(bytes: Buffer): boolean {
    if (this.stream.destroyed || this.stream.writableEnded) return true;
    if (!this.corked) {
      this.corked = true;
      this.stream.cork();
      process.nextTick(() => this.flush());
    }
    return this.stream.write(bytes);
  }

  flush(): void {
    if (!this.corked) return;
    this.corked = false;
    this.stream.uncork();
  }
}
