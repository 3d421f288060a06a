// Reading an open plain socket into the caller's buffers. `net.connect({ onread })` offers this to
// a dialer; a socket that `net.Server` accepted has no such option, and its every read costs a new
// ArrayBuffer, the Readable's push/addChunk, a 'data' event and a maybeReadMore tick (measured with
// pgbench -S through the pooler, docs/performance.md). `readInto` sets on an accepted socket what
// the onread option sets at construction (Node's `initSocketHandle`): the socket's user-buffer
// fields, found by their symbols' descriptions, and `useUserBuffer` on its handle. From then on
// Node's own stream code (`onStreamRead`, `Socket#pause`/`resume`, the end of input) handles the
// socket exactly as one dialed with `onread`.
//
// Where Node's fields are not found (another Node version) or `QUICPOOL_TCP_READ_INTO=0`,
// `readInto` answers false and the socket keeps emitting 'data'.
import net from 'node:net';
import type { ReadInto } from '../session-stream.js';

interface UserBufferHandle {
  useUserBuffer(buffer: Uint8Array): void;
}

/** The symbols of net.Socket's user-buffer fields (the same for every socket). */
interface UserBufferKeys {
  readonly buffer: symbol;
  readonly callback: symbol;
  readonly generator: symbol;
}

let keys: UserBufferKeys | null | undefined;

function userBufferKeys(socket: net.Socket): UserBufferKeys | null {
  if (keys !== undefined) return keys;
  if (process.env['QUICPOOL_TCP_READ_INTO'] === '0') return (keys = null);
  const named = new Map(Object.getOwnPropertySymbols(socket).map((s) => [s.description, s]));
  const buffer = named.get('kBuffer');
  const callback = named.get('kBufferCb');
  const generator = named.get('kBufferGen');
  keys = buffer !== undefined && callback !== undefined && generator !== undefined ? { buffer, callback, generator } : null;
  return keys;
}

type UserBufferSocket = net.Socket & Record<symbol, unknown> & { _handle?: Partial<UserBufferHandle> | null };

/**
 * Whether accepted TCP sockets can read into the caller's buffers in this process, and why not:
 * Node's user-buffer fields on a socket and `useUserBuffer` on its TCP handle.
 */
export function readIntoSupport(): { readonly available: boolean; readonly reason: string | null } {
  if (process.env['QUICPOOL_TCP_READ_INTO'] === '0') return { available: false, reason: 'QUICPOOL_TCP_READ_INTO=0' };
  if (userBufferKeys(new net.Socket()) === null) return { available: false, reason: `net.Socket of Node.js ${process.version} has no kBuffer/kBufferCb/kBufferGen fields` };
  try {
    const tcp = (process as unknown as { binding(name: string): { TCP?: { prototype?: Partial<UserBufferHandle> } } }).binding('tcp_wrap');
    if (typeof tcp.TCP?.prototype?.useUserBuffer === 'function') return { available: true, reason: null };
  } catch {
    // below
  }
  return { available: false, reason: `the TCP handle of Node.js ${process.version} has no useUserBuffer` };
}

/** Switches `socket` to reading into `target`'s buffers; false (and no change) when it cannot. */
export function readInto(socket: net.Socket, target: ReadInto): boolean {
  const s = socket as UserBufferSocket;
  const handle = s._handle;
  if (handle === null || handle === undefined || typeof handle.useUserBuffer !== 'function') return false;
  if (s.connecting || s.destroyed || s.readableEnded || s.readableLength > 0 || s.listenerCount('data') > 0) return false;
  const k = userBufferKeys(socket);
  if (k === null || s[k.buffer] !== null) return false; // unknown fields, or reading into buffers already
  const first = target.buffer();
  s[k.buffer] = first;
  s[k.generator] = target.buffer;
  s[k.callback] = target.callback;
  handle.useUserBuffer(first);
  return true;
}
