// Reading a socket without Node's Readable layer: net.connect's `onread` has libuv read
// straight into a buffer of ours and calls us with the byte count (no 'data' event, no push/
// addChunk/maybeReadMore, no new ArrayBuffer per read). The buffer is reused for the next read
// unless the bytes just delivered may still be referenced (a partial message kept by the decoder,
// a write that did not complete at once, a stream that keeps what it is given): then `retain()`
// makes the next read go to a fresh buffer and the old one is left to whoever holds it.
// Server sockets get it from net.connect; accepted client sockets through readInto() below.

import type net from 'node:net';
import tls from 'node:tls';

/** Node's default read size for streams. */
const READ_SIZE = 64 * 1024;

export type InputConsumer = (chunk: Buffer) => void;

export class SocketInput {
  private buffer: Buffer = Buffer.allocUnsafe(READ_SIZE);
  private retained = false;

  constructor(private consumer: InputConsumer) {}

  /** The `onread` option of net.connect for this input. */
  readonly onread = {
    buffer: (): Buffer => {
      if (this.retained) {
        this.retained = false;
        this.buffer = Buffer.allocUnsafe(READ_SIZE);
      }
      return this.buffer;
    },
    callback: (n: number, buf: Uint8Array): boolean => {
      // `buf` is this.buffer: a view of its first n bytes, valid until the next read unless retained.
      this.consumer(Buffer.from(buf.buffer, buf.byteOffset, n));
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

/** The part of a TCP handle (libuv stream wrap) that `readInto` uses. */
interface UserBufferHandle {
  useUserBuffer(buffer: Uint8Array): void;
}

/**
 * Makes an already accepted plain TCP socket read into `input` as if it had been created with
 * `onread` (net.Server has no such option). Returns false, changing nothing, when that cannot be
 * done safely; the caller then reads 'data' events as usual.
 *
 * Node internals used (checked on v20/v22): net.Socket keeps its `onread` state in three own
 * symbol properties named kBuffer, kBufferCb and kBufferGen (null unless `onread` was given), and
 * its `_handle` has useUserBuffer(); the socket's stream_base onStreamRead then calls kBufferCb
 * for each read and Socket.pause()/resume() stop and restart the handle's reads, exactly as for
 * a socket made by net.connect({ onread }). End of stream and errors keep their usual events.
 * Must be called before the first read (in the 'connection' turn): bytes already read as 'data'
 * would be lost to the new path, so a socket with anything buffered is refused.
 */
export function readInto(socket: net.Socket, input: SocketInput): boolean {
  if (socket instanceof tls.TLSSocket || socket.readableLength > 0 || socket.listenerCount('data') > 0) return false;
  const handle = (socket as unknown as { _handle?: Partial<UserBufferHandle> | null })._handle;
  if (handle === undefined || handle === null || typeof handle.useUserBuffer !== 'function') return false;
  const own = socket as unknown as Record<symbol, unknown>;
  const symbols = new Map<string, symbol>();
  for (const s of Object.getOwnPropertySymbols(socket)) if (s.description !== undefined) symbols.set(s.description, s);
  const kBuffer = symbols.get('kBuffer');
  const kBufferCb = symbols.get('kBufferCb');
  const kBufferGen = symbols.get('kBufferGen');
  if (kBuffer === undefined || kBufferCb === undefined || kBufferGen === undefined) return false;
  if (own[kBuffer] !== null || own[kBufferCb] !== null || own[kBufferGen] !== null) return false;
  const first = input.onread.buffer();
  own[kBuffer] = first;
  own[kBufferCb] = input.onread.callback;
  own[kBufferGen] = input.onread.buffer;
  handle.useUserBuffer(first);
  return true;
}
