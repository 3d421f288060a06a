// Turns a connected net.Socket (or tls.TLSSocket) into a SessionStream without adding a stream
// layer: net.Socket already is a Duplex with setNoDelay/setKeepAlive/ref/unref, so the only
// additions are the `info` property and an abort-on-error `destroy` (see below). Every byte of a
// TCP or TLS session therefore moves exactly as fast as a plain socket.
import net from 'node:net';
import type { Duplex } from 'node:stream';
import type { SessionInfo, SessionStream, StreamErrorCode, TlsDetails, TransportKind } from '../session-stream.js';
import { TransportError } from '../session-stream.js';
import { DirectWriter } from './direct-write.js';
import { readInto } from './read-into.js';

// net.Socket#resetAndDestroy() exists (Node >= 16.17) but destroys without an error, so the
// local side would not see the reason, and it throws for TLS sockets. Node's own _destroy honours
// this flag (it is what resetAndDestroy sets); setting it ourselves lets `destroy(err)` both send
// RST and report `err` locally.
interface ResettableSocket extends net.Socket {
  resetAndClosing?: boolean;
}

const plainDestroy = net.Socket.prototype.destroy;

/**
 * The stream under a TLS socket: a net.Socket we hold (TLS listener and dialer, or an upgraded TCP
 * session), or any other session stream (memory, QUIC). Needed because an abort must reach the
 * bottom layer: only a TCP handle can send RST (a TLSWrap handle cannot), and a memory or QUIC
 * stream aborts only through its own destroy(err).
 */
export const INNER_STREAM: unique symbol = Symbol('quicpool.innerStream');

interface LayeredSocket extends ResettableSocket {
  [INNER_STREAM]?: Duplex;
}

/** Makes the bottom layer of `socket` abort (RST, or destroy(err) of a non-TCP inner stream). */
function abortUnderlying(socket: LayeredSocket, error: Error): void {
  const inner = socket[INNER_STREAM];
  if (inner === undefined) {
    if (!socket.connecting && isTcpHandle(socket)) socket.resetAndClosing = true;
    return;
  }
  if (inner.destroyed) return;
  if (inner instanceof net.Socket) {
    const raw = inner as ResettableSocket;
    if (!raw.connecting && isTcpHandle(raw)) raw.resetAndClosing = true;
    // The raw socket closes first; the TLS socket follows (it listens for the raw close).
    plainDestroy.call(raw);
    return;
  }
  inner.destroy(error);
}

/**
 * `destroy(err)` on a session stream means abort: the peer must see ECONNRESET, not a clean EOF
 * that it could mistake for a finished session. A plain `destroy()` still closes gracefully.
 */
function abortingDestroy(this: LayeredSocket, error?: Error | null): LayeredSocket {
  // Node's internals call destroy(null) too: only a real error means abort.
  if (error !== undefined && error !== null && !this.destroyed) abortUnderlying(this, error);
  return plainDestroy.call(this, error ?? undefined) as LayeredSocket;
}

/**
 * Aborts a session (peer sees ECONNRESET) without emitting an error locally: for closing a
 * listener, whose sessions may not have an 'error' handler yet.
 */
export function abortSocket(socket: net.Socket): void {
  if (socket.destroyed) return;
  abortUnderlying(socket as LayeredSocket, new TransportError('session aborted', 'ECONNABORTED'));
  plainDestroy.call(socket);
}

function isTcpHandle(socket: net.Socket): boolean {
  // `_handle` is untyped in @types/node; a TCP handle has a reset() method, a TLSWrap does not.
  const handle = (socket as unknown as { _handle?: { reset?: unknown } | null })._handle;
  return handle !== null && handle !== undefined && typeof handle.reset === 'function';
}

/** Builds the info of a connected socket (addresses are read once; they never change). */
export function socketInfo(socket: net.Socket, kind: TransportKind, tls: TlsDetails | null): SessionInfo {
  return {
    kind,
    localAddress: socket.localAddress ?? '',
    localPort: socket.localPort ?? 0,
    remoteAddress: socket.remoteAddress ?? '',
    remotePort: socket.remotePort ?? 0,
    tls,
    quic: null,
  };
}

/** A plain socket's direct writer (see tcp/direct-write.ts). */
const DIRECT: unique symbol = Symbol('quicpool.directWriter');
type DirectSocket = net.Socket & { [DIRECT]: DirectWriter };

function directWriteChunk(this: DirectSocket, chunk: Buffer): boolean {
  return this[DIRECT].write(chunk);
}

function directHolds(this: DirectSocket): boolean {
  return this[DIRECT].holds();
}

/** Attaches `info` to a connected socket and returns it typed as a SessionStream. */
export function adoptSocket(
  socket: net.Socket,
  kind: TransportKind,
  tls: TlsDetails | null = null,
  inner?: Duplex,
  info: SessionInfo = socketInfo(socket, kind, tls),
): SessionStream {
  if (inner !== undefined && inner !== socket) (socket as LayeredSocket)[INNER_STREAM] = inner;
  Object.defineProperty(socket, 'info', { value: info, enumerable: true, configurable: true });
  socket.destroy = abortingDestroy;
  const s = socket as net.Socket & Pick<SessionStream, 'holdsWrittenBytes' | 'replayWindow' | 'writeChunk' | 'readInto'> & { writeBatching: SessionStream['writeBatching'] };
  const plain = kind === 'tcp' || kind === 'unix';
  if (plain) {
    (socket as DirectSocket)[DIRECT] = new DirectWriter(socket);
    // One function for every socket (not a closure each): a writer calling it on many sockets
    // sees one target.
    s.writeChunk = directWriteChunk;
    s.readInto = (target) => readInto(socket, target);
    // A plain socket keeps a write's Buffer only while libuv could not write it at once.
    s.holdsWrittenBytes = directHolds;
  } else {
    s.holdsWrittenBytes = alwaysHolds;
  }
  s.writeBatching = 'per-read';
  s.replayWindow = noReplayWindow;
  return socket as net.Socket & SessionStream;
}

/** TCP and TLS carry no replayable early data. */
function noReplayWindow(): null {
  return null;
}

/** A TLS socket hands its cleartext to the TLS layer, which may keep it until written. */
function alwaysHolds(): boolean {
  return true;
}

/** Node socket error codes that mean "could not reach the peer" when dialing. */
const REFUSED_CODES = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EADDRNOTAVAIL']);

/** Maps a dial/handshake failure to the TransportError the abstraction promises. */
export function dialError(what: string, error: unknown): TransportError {
  if (error instanceof TransportError) return error;
  const code = errorCode(error);
  let mapped: StreamErrorCode = 'ECONNABORTED';
  if (code !== undefined && REFUSED_CODES.has(code)) mapped = 'ECONNREFUSED';
  else if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'ETIMEDOUT') mapped = code;
  const detail = error instanceof Error ? error.message : String(error);
  return new TransportError(`${what}: ${detail}`, mapped, { cause: error });
}

export function errorCode(error: unknown): string | undefined {
  if (typeof error === 'object' && error !== null && 'code' in error) {
    const code = (error as { code: unknown }).code;
    return typeof code === 'string' ? code : undefined;
  }
  return undefined;
}
