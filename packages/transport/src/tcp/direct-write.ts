// Writing a plain TCP or unix socket without Node's Writable layer. `socket.write()` costs a
// WriteWrap instantiated from a template, the Writable's bookkeeping and an after-write tick for
// every write; a pooler that writes one batch per socket per turn pays that twice per transaction
// (measured with pgbench -S through the pooler: ~8% of its CPU per transaction, docs/performance.md).
// `writeChunk` hands the bytes to the socket's libuv handle directly, as Node's own writeGeneric
// does, whenever nothing else is queued: libuv writes them at once (the common case) or queues
// them and reports back. Anything else goes through `socket.write()`, which queues behind, so the
// byte order never changes.
//
// The handle's `writeBuffer` and the `WriteWrap` request come from Node's internal stream binding
// (`process.binding('stream_wrap')`, documented as deprecated, DEP0111: only
// `--pending-deprecation` prints a warning). Where it is missing or `QUICPOOL_TCP_DIRECT_WRITE=0`,
// `writeChunk` is `write`.
import type net from 'node:net';

interface WriteRequest {
  handle: StreamHandle;
  /** Called by libuv's completion with the request as `this`. */
  oncomplete: (this: WriteRequest, status: number) => void;
  /** Ours: the socket a queued write belongs to. */
  owner: DirectSocket | null;
  async: boolean;
  bytes: number;
  buffer: Buffer | null;
}

interface StreamHandle {
  writeBuffer(req: WriteRequest, data: Buffer): number;
}

interface StreamWrapBinding {
  readonly WriteWrap: new () => WriteRequest;
  readonly streamBaseState: Int32Array;
  readonly kLastWriteWasAsync: number;
}

function loadBinding(): StreamWrapBinding | null {
  if (process.env['QUICPOOL_TCP_DIRECT_WRITE'] === '0') return null;
  try {
    const b = (process as unknown as { binding(name: string): Partial<StreamWrapBinding> }).binding('stream_wrap');
    if (typeof b.WriteWrap !== 'function' || !(b.streamBaseState instanceof Int32Array) || typeof b.kLastWriteWasAsync !== 'number') return null;
    return { WriteWrap: b.WriteWrap, streamBaseState: b.streamBaseState, kLastWriteWasAsync: b.kLastWriteWasAsync };
  } catch {
    return null;
  }
}

const binding = loadBinding();

/** Whether plain sockets write through their handle directly (false: `writeChunk` is `write`). */
export const directWriteAvailable = binding !== null;

/** What a plain socket keeps for its direct writes still queued in libuv. */
interface DirectState {
  /** Direct writes libuv queued and has not completed yet. */
  queued: number;
  /** A caller saw `false` from writeChunk: 'drain' is owed once the queue is written. */
  drainOwed: boolean;
}

const STATE: unique symbol = Symbol('quicpool.directWrite');

type DirectSocket = net.Socket & { [STATE]?: DirectState; _handle?: StreamHandle | null };

/**
 * Writes `chunk` to a plain TCP or unix socket: straight to its handle when nothing is queued,
 * else through `write()`. Returns false when the caller should wait for 'drain', as write() does.
 */
export function writeChunk(socket: net.Socket, chunk: Buffer): boolean {
  if (binding === null) return socket.write(chunk);
  const s = socket as DirectSocket;
  const handle = s._handle;
  const state = (s[STATE] ??= { queued: 0, drainOwed: false });
  if (handle === null || handle === undefined || s.connecting || s.destroyed || s.writableEnded || s.writableLength > 0 || s.writableCorked > 0 || state.queued > 0) {
    const more = s.write(chunk);
    if (state.queued === 0) return more;
    state.drainOwed = true; // behind a direct write still queued: 'drain' comes when it is written
    return false;
  }
  const req = new binding.WriteWrap();
  req.handle = handle;
  req.async = false;
  req.bytes = 0;
  req.buffer = chunk; // kept alive while libuv may still read it
  req.oncomplete = onComplete;
  req.owner = s;
  const err = handle.writeBuffer(req, chunk);
  if (err !== 0) {
    s.destroy(writeError(err));
    return true;
  }
  if (binding.streamBaseState[binding.kLastWriteWasAsync] === 0) return true;
  state.queued++;
  state.drainOwed = true;
  return false;
}

/** libuv finished a queued direct write (`this` is its request). */
function onComplete(this: WriteRequest, status: number): void {
  const s = this.owner;
  const state = s?.[STATE];
  if (s === null || state === undefined) return;
  state.queued--;
  if (status < 0) {
    if (!s.destroyed) s.destroy(writeError(status));
    return;
  }
  if (state.queued === 0 && state.drainOwed) {
    // Also when the Writable still holds writes made behind ours: a caller waiting for 'drain'
    // checks again, and the Writable sends its own 'drain' if it needs one.
    state.drainOwed = false;
    s.emit('drain');
  }
}

function writeError(errno: number): Error {
  return Object.assign(new Error(`write failed (${errno})`), { errno, code: 'EPIPE', syscall: 'write' });
}

/** Whether direct writes of `socket` are still queued in libuv (their Buffers are still read). */
export function directWritesQueued(socket: net.Socket): boolean {
  return ((socket as DirectSocket)[STATE]?.queued ?? 0) > 0;
}
