// A fake server connection for pool tests: answers every Query with ReadyForQuery on the next
// microtask, like an instant server, and records the queries it was sent.
import { EventEmitter } from 'node:events';
import type { SessionInfo, SessionStream } from '@quicpool/transport';
import { BackendDecoder, encodeBackend } from '@quicpool/wire';
import type { BackendConnection } from '../../src/backend/connect.js';
import type { PoolDependencies, Waiter } from '../../src/pool/pool.js';
import type { Backend } from '../../src/backend/backend.js';
import type { EncodedError } from '../../src/runtime/encoded-error.js';
import { WriteBatcher } from '../../src/runtime/write-batcher.js';
import type { Clock } from '../../src/runtime/clock.js';

const READY = encodeBackend({ type: 'ReadyForQuery', status: 'I' });

export class FakeSocket extends EventEmitter {
  destroyed = false;
  writableEnded = false;
  writableNeedDrain = false;
  readonly writeBatching = 'per-read';
  readonly info: SessionInfo = { kind: 'tcp', localAddress: '127.0.0.1', localPort: 1, remoteAddress: '127.0.0.1', remotePort: 2, tls: null, quic: null };
  readonly queries: string[] = [];
  holdsWrittenBytes(): boolean {
    return false;
  }
  replayWindow(): null {
    return null;
  }
  write(bytes: Buffer): boolean {
    if (bytes[0] === 0x51) {
      this.queries.push(bytes.toString('utf8', 5, bytes.length - 1));
      queueMicrotask(() => !this.destroyed && this.emit('data', READY));
    }
    return true;
  }
  end(): void {
    this.writableEnded = true;
    queueMicrotask(() => this.emit('finish'));
    this.destroy();
  }
  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    queueMicrotask(() => this.emit('close'));
  }
  pause(): void {}
  resume(): void {}
}

let pid = 1;
export const sockets: FakeSocket[] = [];
export const fakeConnect = async (): Promise<BackendConnection> => {
  const socket = new FakeSocket();
  sockets.push(socket);
  return {
    server: { host: '127.0.0.1', port: 5432 },
    role: undefined,
    stream: socket as unknown as SessionStream,
    decoder: new BackendDecoder(),
    parameters: new Map([['server_version', '17']]),
    processId: pid++,
    secretKey: Buffer.alloc(4),
    input: null,
  };
};

/** A pool's dependencies with the fake server and `clock`. */
export const fakeDeps = (clock: Clock, connect: PoolDependencies['connect'] = fakeConnect): PoolDependencies => ({ clock, connect, batcher: new WriteBatcher() });

export const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

/** A waiter that keeps what the pool gave it: a backend, or an error. */
export function recordingWaiter(): Waiter & { backend: Backend | null; error: EncodedError | null } {
  return {
    backend: null,
    error: null,
    onBackend(b) {
      this.backend = b;
    },
    onError(e) {
      this.error = e;
    },
    onBackendMessage: () => undefined,
    onBackendLost: () => undefined,
  };
}
