// The one abstraction every byte of quicpool moves through: a session stream is a Node.js Duplex
// (node-postgres and postgres.js take one as their socket) that carries exactly one Postgres
// session, plus metadata saying how it arrived. A TCP connection, a TLS connection and one QUIC
// stream are all just session streams to the pooler and the client.
import type { Duplex } from 'node:stream';
import type { PeerCertificate } from './peer-certificate.js';

export type TransportKind = 'tcp' | 'unix' | 'tls' | 'quic' | 'memory';

/** What TLS negotiated (TLS over TCP, or the TLS 1.3 inside QUIC). */
export interface TlsDetails {
  readonly protocol: string | null;
  /** The ALPN protocol both sides agreed on, or null when none was negotiated. */
  readonly alpnProtocol: string | null;
  /** True when the peer's certificate was verified (always true for a client unless insecure mode). */
  readonly authorized: boolean;
  readonly servername: string | null;
  /**
   * The peer's certificate when it presented one that verified, else null. On a server: a client
   * certificate checked against the listener's client CA (TLS `requestCert` + `ca`, QUIC
   * `clientCa`); on a client: the server's certificate (null with verification off). On a QUIC
   * stream it is read from the connection when asked (a resumed connection knows it from its
   * session ticket, even during 0-RTT).
   */
  readonly peerCertificate: PeerCertificate | null;
}

export interface QuicDetails {
  /** Hex of the local connection id this stream's connection is routed by. */
  readonly connectionId: string;
  readonly streamId: number;
  /**
   * True when the peer's first bytes on this stream arrived as 0-RTT early data, which an attacker
   * can replay. The application decides what it accepts from such a stream (see README).
   */
  readonly earlyData: boolean;
}

export interface SessionInfo {
  readonly kind: TransportKind;
  readonly localAddress: string;
  readonly localPort: number;
  readonly remoteAddress: string;
  readonly remotePort: number;
  readonly tls: TlsDetails | null;
  readonly quic: QuicDetails | null;
}

/**
 * A Duplex that behaves like `net.Socket` where it matters: `end()` half-closes (FIN),
 * `destroy(err)` aborts (RST / RESET_STREAM + STOP_SENDING), a peer reset surfaces as an error
 * with `code: 'ECONNRESET'`, and losing the underlying connection errors every stream on it.
 * `setNoDelay`/`setKeepAlive`/`ref`/`unref` exist so drivers that call them on sockets work.
 */
export interface SessionStream extends Duplex {
  readonly info: SessionInfo;
  /**
   * `net.Socket#readyState`: drivers rely on it. postgres.js sends Terminate only when it is
   * 'open' and then waits for 'close' unless it is 'closed' — without it `sql.end()` never resolves.
   */
  readonly readyState: SocketReadyState;
  /**
   * Whether the stream may still reference the memory of writes already made (so the writer must
   * not reuse it yet). A TCP socket whose writes completed at once and a QUIC stream whose data
   * quiche has copied hold nothing; a TLS socket, an in-memory stream (the peer receives the very
   * Buffer) and any stream with a write backlog do. A pooler forwarding from a reused read buffer
   * asks this after each batch of writes.
   */
  holdsWrittenBytes(): boolean;
  /**
   * How writes that a read causes may be batched: 'per-read' (sockets, QUIC: flushing them as soon
   * as the read is handled is fine) or 'per-turn' (an in-memory peer handles our bytes inside our
   * write(), so they wait for the end of the turn).
   */
  readonly writeBatching: 'per-read' | 'per-turn';
  /**
   * Where present, writes `chunk` as `write()` would (same order, same backpressure answer) at a
   * lower cost: a plain TCP or unix socket hands it to its libuv handle directly when nothing is
   * queued (tcp/direct-write.ts), a QUIC stream to quiche (quic/stream.ts). A writer that batches
   * into one write per turn uses it.
   */
  writeChunk?(chunk: Buffer): boolean;
  /**
   * Where present (plain TCP and unix sockets, QUIC streams), switches an open stream to reading
   * into the caller's buffers (see `ReadInto`): no more 'data' events; 'end', 'error', 'close',
   * `pause()` and `resume()` as before. Returns false and changes nothing when it cannot: a 'data'
   * listener, the stream ended or destroyed, or (a socket) bytes already buffered (tcp/read-into.ts,
   * quic/stream.ts).
   */
  readInto?(target: ReadInto): boolean;
  /**
   * Null when nothing on this stream can be a replay; otherwise (a QUIC stream whose first bytes
   * came as 0-RTT early data, before its handshake is confirmed) a promise that resolves once
   * the handshake is confirmed and rejects if the connection fails first. A server acts on
   * anything but harmless startup traffic only after it (see quic/README.md).
   */
  replayWindow(): Promise<void> | null;
  setNoDelay(noDelay?: boolean): this;
  setKeepAlive(enable?: boolean, initialDelay?: number): this;
  ref(): this;
  unref(): this;
}

/**
 * Reads into a buffer of the caller's instead of a new one per read, without 'data' events (Node's
 * `onread` option of `net.connect`: `buffer()` gives the memory of the next read, `callback(n,
 * buf)` gets its first n bytes). For a reader that can reuse its buffer, e.g. a pooler forwarding
 * a server's bytes, or one that wants reads without Node's Readable layer.
 */
export interface ReadInto {
  buffer(): Uint8Array;
  callback(bytesRead: number, buffer: Uint8Array): boolean;
}

export type SocketReadyState = 'opening' | 'open' | 'readOnly' | 'writeOnly' | 'closed';

/** `readyState` of a Duplex that is connected from the start, computed the way net.Socket does. */
export function duplexReadyState(d: Duplex): SocketReadyState {
  if (d.readable && d.writable) return 'open';
  if (d.readable) return 'readOnly';
  if (d.writable) return 'writeOnly';
  return 'closed';
}

/** Accepts session streams from peers. */
export interface SessionListener {
  readonly kind: TransportKind;
  /** The bound address (the real port when listening on port 0). */
  address(): { address: string; port: number };
  /** Called once for every new session stream. */
  onSession(handler: (stream: SessionStream) => void): void;
  /** Called for every connection whose handshake failed (QUIC: ALPN, certificate, timeout). */
  onHandshakeFailed?(handler: (failure: HandshakeFailure) => void): void;
  /** Stops accepting. `graceful` lets open sessions finish; otherwise they are destroyed. */
  close(options?: { graceful?: boolean }): Promise<void>;
}

/** A connection that never completed its handshake: who, and why (for logs and counters). */
export interface HandshakeFailure {
  readonly remoteAddress: string;
  readonly remotePort: number;
  readonly reason: string;
}

/** Opens session streams to one peer. */
export interface SessionDialer {
  readonly kind: TransportKind;
  open(): Promise<SessionStream>;
  close(): Promise<void>;
}

/** Error codes used on stream errors, matching what `net.Socket` users already handle. */
export type StreamErrorCode = 'ECONNRESET' | 'ECONNREFUSED' | 'ETIMEDOUT' | 'EPIPE' | 'ECONNABORTED' | 'ERR_TLS_CERT' ;

export class TransportError extends Error {
  override readonly name = 'TransportError';
  constructor(
    message: string,
    readonly code: StreamErrorCode,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
