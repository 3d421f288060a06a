// The pooler's own cancel keys: random, unguessable, one per client session. A CancelRequest
// carrying one is turned into a CancelRequest with the real backend's key, sent to the server on
// a connection of its own (the protocol's way), through the same dialer as the backends. With
// several workers the low byte of a key's process id names the worker that holds the session, so
// a CancelRequest that lands on another worker is passed to that one (PgBouncer's peering).
import { randomBytes, randomInt, timingSafeEqual } from 'node:crypto';
import { encodeStartupPacket } from '@quicpool/wire';
import { dialServer } from '../backend/dial.js';
import type { ServerAddress } from '../backend/dial.js';
import type { Clock } from '../runtime/clock.js';
import type { CancelKey } from '../session/types.js';

export class CancelRegistry<T> {
  private readonly byProcessId = new Map<number, { readonly secretKey: Buffer; readonly target: T }>();

  /** The keys of worker `worker` of `workers` (at most 256: the worker is the process id's low byte). */
  constructor(
    private readonly worker = 0,
    private readonly workers = 1,
  ) {}

  /** The worker that holds the session a key's process id belongs to. */
  workerOf(processId: number): number {
    return this.workers === 1 ? 0 : processId & 0xff;
  }

  /** A fresh key for `target`: 4-byte secret for protocol 3.0, 32 bytes from 3.2 on. */
  register(target: T, protocolMinor: number): CancelKey {
    let processId: number;
    do processId = this.workers === 1 ? randomInt(1, 0x7fffffff) : (randomInt(1, 1 << 23) << 8) | this.worker;
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

/**
 * Sends a CancelRequest with the backend's key to the server and waits until the server closes
 * that connection (or `timeoutMs`). Never rejects: a cancel that cannot be delivered is lost, as
 * a client's own would be.
 */
export async function forwardCancel(server: ServerAddress, key: CancelKey, timeoutMs: number, clock: Clock): Promise<void> {
  let dialed;
  try {
    dialed = await dialServer(server, { connectTimeoutMs: timeoutMs });
  } catch {
    return;
  }
  const stream = dialed.stream;
  await new Promise<void>((resolve) => {
    const timer = clock.setTimer(() => stream.destroy(), timeoutMs);
    stream.on('error', () => undefined);
    stream.on('close', () => {
      clock.clearTimer(timer);
      resolve();
    });
    stream.resume();
    stream.end(encodeStartupPacket({ type: 'CancelRequest', processId: key.processId, secretKey: key.secretKey }));
  });
}
