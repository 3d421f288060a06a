// Writing a plain TCP or unix socket without Node's Writable layer. `socket.write()` costs a
// WriteWrap instantiated from a template, the Writable's bookkeeping and an after-write tick for
// every write; a pooler that writes one batch per socket per turn pays that twice per transaction
// (measured with pgbench -S through the pooler: ~8% of its CPU per transaction, docs/performance.md).
// `writeChunk` hands the bytes to the socket's libuv handle directly, as Node's own writeGeneric
// does, whenever nothing else is queued: libuv writes them at once (the common case) or queues
// them and reports back. Anything else goes through `socket.write()`, which queues behind, so the
// byte order never changes. A write that completes at once leaves its request object untouched
// (Node's StreamBase::Write binds a request only when libuv queues), so one request serves every
// such write; only a queued write takes it and the next write makes a new one.
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
  /** Ours: the writer a queued write belongs to. */
  owner: DirectWriter;
  /** The bytes libuv still reads: kept alive until it completes. */
  buffer: Buffer;
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

/** directWriteAvailable, and why not. */
export function directWriteSupport(): { readonly available: boolean; readonly reason: string | null } {
  if (binding !== null) return { available: true, reason: null };
  const off = process.env['QUICPOOL_TCP_DIRECT_WRITE'] === '0';
  return { available: false, reason: off ? 'QUICPOOL_TCP_DIRECT_WRITE=0' : `Node.js ${process.version} has no stream_wrap WriteWrap/streamBaseState` };
}

/** The `_writableState` fields a direct write must find at rest. */
interface WritableStateView {
  readonly length: number;
  readonly corked: number;
  readonly ending: boolean;
}

type PlainSocket = net.Socket & { _handle?: StreamHandle | null; _writableState: WritableStateView };

/** A request for the next write (see the top of this file); null once a queued write took it. */
let spare: WriteRequest | null = null;

/**
 * The direct writes of one plain TCP or unix socket. Writes `chunk` as `write()` would: straight
 * to the handle when nothing is queued, else through `write()`. Returns false when the caller
 * should wait for 'drain', as write() does.
 */
export class DirectWriter {
  /** Direct writes libuv queued and has not completed yet. */
  queued = 0;
  /** A caller saw `false` from write(): 'drain' is owed once the queue is written. */
  private drainOwed = false;
  /** A write went through `socket.write()`: the Writable may hold it until it is written. */
  private viaWritable = false;
  private readonly socket: PlainSocket;
  private readonly state: WritableStateView;

  constructor(socket: net.Socket) {
    this.socket = socket as PlainSocket;
    this.state = this.socket._writableState;
  }

  write(chunk: Buffer): boolean {
    const s = this.socket;
    const handle = s._handle;
    const w = this.state;
    // A destroyed socket has no handle (net.Socket#_destroy drops it at once).
    if (binding === null || handle === null || handle === undefined || s.connecting || w.ending || w.length > 0 || w.corked > 0 || this.queued > 0) {
      this.viaWritable = true;
      const more = s.write(chunk);
      if (this.queued === 0) return more;
      this.drainOwed = true; // behind a direct write still queued: 'drain' comes when it is written
      return false;
    }
    const req = spare ?? new binding.WriteWrap();
    spare = null;
    const err = handle.writeBuffer(req, chunk);
    if (err !== 0) {
      s.destroy(writeError(err));
      return true;
    }
    if (binding.streamBaseState[binding.kLastWriteWasAsync] === 0) {
      spare = req;
      return true;
    }
    // libuv queued it: the request is bound to this write now.
    req.handle = handle;
    req.owner = this;
    req.buffer = chunk;
    req.oncomplete = onComplete;
    this.queued++;
    this.drainOwed = true;
    return false;
  }

  /** Whether the socket may still reference a written Buffer (see SessionStream.holdsWrittenBytes). */
  holds(): boolean {
    if (this.queued > 0) return true;
    if (!this.viaWritable) return false; // every write so far completed at once
    if (this.socket.writableLength > 0) return true;
    this.viaWritable = false;
    return false;
  }

  /** libuv finished a queued write. */
  completed(status: number): void {
    this.queued--;
    const s = this.socket;
    if (status < 0) {
      if (!s.destroyed) s.destroy(writeError(status));
      return;
    }
    if (this.queued === 0 && this.drainOwed) {
      // Also when the Writable still holds writes made behind ours: a caller waiting for 'drain'
      // checks again, and the Writable sends its own 'drain' if it needs one.
      this.drainOwed = false;
      s.emit('drain');
    }
  }
}

/** libuv's completion of a queued direct write (`this` is its request). */
function onComplete(this: WriteRequest, status: number): void {
  this.owner.completed(status);
}

function writeError(errno: number): Error {
  return Object.assign(new Error(`write failed (${errno})`), { errno, code: 'EPIPE', syscall: 'write' });
}
