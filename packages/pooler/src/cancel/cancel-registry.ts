// The pooler's own cancel keys: random, unguessable, one per client session. A CancelRequest
// carrying one is turned into a CancelRequest with the real backend's key, sent to the server.
import net from 'node:net';
import { randomBytes, randomInt, timingSafeEqual } from 'node:crypto';
import { encodeStartupPacket } from '@quicpool/wire';
import type { CancelKey } from '../session/types.js';

export class CancelRegistry<T> {
  private readonly byProcessId = new Map<number, { readonly secretKey: Buffer; readonly target: T }>();

  /** A fresh key for `target`: 4-byte secret for protocol 3.0, 32 bytes from 3.2 on. */
  register(target: T, protocolMinor: number): CancelKey {
    let processId: number;
    do processId = randomInt(1, 0x7fffffff);
    while (this.byProcessId.has(processId));
    const secretKey = randomBytes(protocolMinor >= 2 ? 32 : 4);
    this.byProcessId.set(processId, { secretKey, target });
    return { processId, secretKey };
  }

  unregister(processId: number): void {
    this.byProcessId.delete(processId);
  }

  /** The session a CancelRequest names, if its key matches exactly. */
  lookup(processId: number, secretKey: Buffer): T | undefined {
    const entry = this.byProcessId.get(processId);
    if (entry === undefined || entry.secretKey.length !== secretKey.length) return undefined;
    return timingSafeEqual(entry.secretKey, secretKey) ? entry.target : undefined;
  }

  get size(): number {
    return this.byProcessId.size;
  }
}

/** Sends a CancelRequest to the real server on a new connection (the protocol's way). */
export function sendCancelRequest(host: string, port: number, processId: number, secretKey: Buffer, timeoutMs = 5000): Promise<void> {
  return new Promise<void>((resolve) => {
    const socket = net.connect({ host, port });
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve();
    });
    socket.once('connect', () => socket.end(encodeStartupPacket({ type: 'CancelRequest', processId, secretKey })));
  });
}
