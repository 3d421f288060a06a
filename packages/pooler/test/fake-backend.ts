// A fake server connection for pool tests: answers every Query with ReadyForQuery on the next
// microtask, like an instant server, and records the queries it was sent.
import { EventEmitter } from 'node:events';
import type net from 'node:net';
import { BackendDecoder, encodeBackend } from '@quicpool/wire';
import type { BackendConnection } from '../src/backend/connect.js';

const READY = encodeBackend({ type: 'ReadyForQuery', status: 'I' });

export class FakeSocket extends EventEmitter {
  destroyed = false;
  readonly queries: string[] = [];
  write(bytes: Buffer): boolean {
    if (bytes[0] === 0x51) {
      this.queries.push(bytes.toString('utf8', 5, bytes.length - 1));
      queueMicrotask(() => !this.destroyed && this.emit('data', READY));
    }
    return true;
  }
  end(): void {
    this.destroy();
  }
  destroySoon(): void {
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
    socket: socket as unknown as net.Socket,
    decoder: new BackendDecoder(),
    parameters: new Map([['server_version', '17']]),
    processId: pid++,
    secretKey: Buffer.alloc(4),
  };
};

export const tick = (): Promise<void> => new Promise((r) => setImmediate(r));
