// Follows the message framing of bytes that are forwarded raw (type byte, Int32 length, body),
// without copying or decoding them, so the agent knows when it may put a message of its own (an
// ErrorResponse) between them, and which message was the last one (Terminate or not). No I/O.

/** Message type of Terminate ('X'). */
const TERMINATE = 0x58;

export class MessageBoundary {
  private readonly header = Buffer.alloc(5);
  private headerHave = 0;
  private bodyLeft = 0;
  private last = -1;
  private broken = false;

  /** Accounts for `chunk`, the next bytes of the stream. */
  feed(chunk: Uint8Array): void {
    let i = 0;
    const n = chunk.length;
    while (i < n && !this.broken) {
      if (this.bodyLeft > 0) {
        const take = Math.min(this.bodyLeft, n - i);
        this.bodyLeft -= take;
        i += take;
        continue;
      }
      this.header[this.headerHave++] = chunk[i++]!;
      if (this.headerHave === 5) {
        this.headerHave = 0;
        const length = this.header.readInt32BE(1);
        if (length < 4) {
          this.broken = true; // not a protocol stream any more: never at a boundary again
          return;
        }
        this.last = this.header[0]!;
        this.bodyLeft = length - 4;
      }
    }
  }

  /** True between two whole messages (where a message of our own may go). */
  get atBoundary(): boolean {
    return !this.broken && this.headerHave === 0 && this.bodyLeft === 0;
  }

  /** The last whole message was a Terminate: the client said goodbye. */
  get terminated(): boolean {
    return this.atBoundary && this.last === TERMINATE;
  }
}
