// How a client's socket or QUIC stream is read (SessionStream.readInto): into fresh memory every
// time, since the session may keep views of what it read for as long as it likes (requests queued
// while it waits for a server, a partial message in the decoder). Unlike Node's default reads (a 64 KiB
// allocation trimmed to the bytes read, then the Readable's push and 'data'), a read goes into a
// small slice of Node's shared Buffer pool; a read that fills its slice makes the next one large.
import type { ReadInto } from '@quicpool/transport';

/** A client request usually fits: a slice of Node's 8 KiB Buffer pool (allocUnsafe pools below 4 KiB). */
const SMALL_READ = 1024;
/** After a read filled its buffer (a COPY, a large Bind), reads go in Node's default size. */
const LARGE_READ = 64 * 1024;

/** Reads for one client session, each handed to `consumer` as a Buffer it may keep, of which `length` bytes were read. */
export function clientReads(consumer: (chunk: Buffer, length: number) => void): ReadInto {
  let size = SMALL_READ;
  return {
    buffer: () => Buffer.allocUnsafe(size),
    callback: (n: number, buf: Uint8Array): boolean => {
      size = n === buf.length ? LARGE_READ : SMALL_READ;
      // `buf` is the Buffer made by buffer() above.
      consumer(buf as Buffer, n);
      return true;
    },
  };
}
