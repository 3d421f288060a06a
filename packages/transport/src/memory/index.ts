// An in-memory pair of session streams for tests: what one side writes the other reads, with
// real backpressure (a write completes only when the reader has room), half-close (end() is EOF
// on the peer) and abort (destroy(err) makes the peer fail with ECONNRESET), like a socket pair.
import { Duplex } from 'node:stream';
import type { SessionInfo, SessionStream, SocketReadyState } from '../session-stream.js';
import { TransportError, duplexReadyState } from '../session-stream.js';

export interface MemoryPairOptions {
  /** Bytes a side buffers for reading before the writer waits. Default 64 KiB (like a socket). */
  highWaterMark?: number;
}

let nextPort = 1;

class MemoryStream extends Duplex implements SessionStream {
  peer: MemoryStream | null = null;
  /** The callback of our write that waits for the peer to want more. */
  private blockedWrite: ((error?: Error | null) => void) | null = null;
  /** True once EOF was pushed into our readable side (push(null) twice throws). */
  private eofReceived = false;

  constructor(
    readonly info: SessionInfo,
    highWaterMark: number,
  ) {
    super({ highWaterMark, allowHalfOpen: true });
  }

  /** Like net.Socket's (postgres.js reads it before sending Terminate and waiting for 'close'). */
  get readyState(): SocketReadyState {
    return duplexReadyState(this);
  }

  /** The peer receives the very Buffers written. */
  holdsWrittenBytes(): boolean {
    return true;
  }

  /** The peer handles our bytes inside our write(). */
  readonly writeBatching = 'per-turn' as const;

  replayWindow(): null {
    return null;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    const peer = this.peer;
    if (peer === null || peer.destroyed || peer.eofReceived) {
      callback(new TransportError('memory stream: peer is gone', 'EPIPE'));
      return;
    }
    // push() returning false means the peer's buffer is full: hold the callback (and with it
    // every further write) until the peer reads (_read below).
    if (peer.push(chunk)) callback();
    else this.blockedWrite = callback;
  }

  override _read(): void {
    const writer = this.peer;
    const callback = writer?.blockedWrite ?? null;
    if (writer !== null && callback !== null) {
      writer.blockedWrite = null;
      callback();
    }
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.peer?.receiveEof();
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    const peer = this.peer;
    this.peer = null;
    this.releaseBlockedWrite(new TransportError('memory stream destroyed', 'EPIPE'));
    if (peer !== null && !peer.destroyed) {
      peer.releaseBlockedWrite(new TransportError('memory stream: peer is gone', 'EPIPE'));
      if (error !== null) {
        // An abort: the peer loses whatever it had not read, as with a TCP RST.
        peer.destroy(new TransportError('memory stream reset by peer', 'ECONNRESET', { cause: error }));
      } else {
        // A plain destroy closes like a socket close: the peer reads EOF; its writes then fail.
        peer.receiveEof();
      }
    }
    callback(error);
  }

  private receiveEof(): void {
    if (this.eofReceived) return;
    this.eofReceived = true;
    this.push(null);
  }

  private releaseBlockedWrite(error: Error): void {
    const callback = this.blockedWrite;
    this.blockedWrite = null;
    callback?.(error);
  }

  setNoDelay(): this {
    return this;
  }
  setKeepAlive(): this {
    return this;
  }
  ref(): this {
    return this;
  }
  unref(): this {
    return this;
  }
}

/** Two connected session streams: [client side, server side]. */
export function createMemoryPair(options: MemoryPairOptions = {}): [SessionStream, SessionStream] {
  const highWaterMark = options.highWaterMark ?? 64 * 1024;
  const clientPort = nextPort++;
  const serverPort = nextPort++;
  const info = (localPort: number, remotePort: number): SessionInfo => ({
    kind: 'memory',
    localAddress: 'memory',
    localPort,
    remoteAddress: 'memory',
    remotePort,
    tls: null,
    quic: null,
  });
  const client = new MemoryStream(info(clientPort, serverPort), highWaterMark);
  const server = new MemoryStream(info(serverPort, clientPort), highWaterMark);
  client.peer = server;
  server.peer = client;
  return [client, server];
}
