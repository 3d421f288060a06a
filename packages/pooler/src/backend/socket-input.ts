// Reading a server connection without Node's Readable layer: the transport's `readInto` (Node's
// `onread`) has libuv read straight into a buffer of ours and calls us with the byte count (no
// 'data' event, no push/addChunk/maybeReadMore, no new ArrayBuffer per read). The buffer is reused for the next read
// unless the bytes just delivered may still be referenced (a partial message kept by the decoder,
// a write that did not complete at once, a stream that keeps what it is given): then `retain()`
// makes the next read go to a fresh buffer and the old one is left to whoever holds it.

import type { ReadInto } from '@quicpool/transport';

/** Node's default read size for streams. */
const READ_SIZE = 64 * 1024;


/** `chunk`'s first `length` bytes were read. */
export type InputConsumer = (chunk: Buffer, length: number) => void;

export class SocketInput {
  private buffer: Buffer = Buffer.allocUnsafe(READ_SIZE);
  private retained = false;

  constructor(private consumer: InputConsumer) {}

  /** The `readInto` option of the transport's dialers for this input. */
  readonly readInto: ReadInto = {
    buffer: (): Buffer => {
      if (this.retained) {
        this.retained = false;
        this.buffer = Buffer.allocUnsafe(READ_SIZE);
      }
      return this.buffer;
    },
    callback: (n: number): boolean => {
      // The read went into this.buffer: its first n bytes are valid until the next read unless retained.
      this.consumer(this.buffer, n);
      return true;
    },
  };

  /** From now on the bytes go to `consumer`. */
  setConsumer(consumer: InputConsumer): void {
    this.consumer = consumer;
  }

  /** The bytes delivered last stay referenced: the next read must not overwrite them. */
  retain(): void {
    this.retained = true;
  }
}
