// The FIFO of acquire() calls waiting for a session stream: each with an optional deadline and
// AbortSignal, armed while queued and disarmed when it leaves the queue, whichever way.
import type { QuicSessionStream } from '@quicpool/transport';

export interface Waiter {
  resolve(s: QuicSessionStream): void;
  reject(e: Error): void;
  readonly signal: AbortSignal | undefined;
  /** Connections tried that failed before giving a stream. */
  attempts: number;
  timer: NodeJS.Timeout | null;
  onAbort: (() => void) | null;
}

export function newWaiter(resolve: (s: QuicSessionStream) => void, reject: (e: Error) => void, signal: AbortSignal | undefined): Waiter {
  return { resolve, reject, signal, attempts: 0, timer: null, onAbort: null };
}

export class WaitQueue {
  private items: Waiter[] = [];

  constructor(
    private readonly timeoutMs: number,
    /** The error for a waiter whose deadline passed (it is already out of the queue). */
    private readonly timedOut: () => Error,
  ) {}

  get length(): number {
    return this.items.length;
  }

  /** Queue (at the back, or at the front for a retry) and arm its deadline and signal. */
  add(w: Waiter, front = false): void {
    if (front) this.items.unshift(w);
    else this.items.push(w);
    if (this.timeoutMs > 0 && w.timer === null) {
      w.timer = setTimeout(() => {
        this.remove(w);
        w.reject(this.timedOut());
      }, this.timeoutMs);
    }
    if (w.signal !== undefined && w.onAbort === null) {
      const signal = w.signal;
      w.onAbort = () => {
        this.remove(w);
        w.reject(abortError(signal));
      };
      signal.addEventListener('abort', w.onAbort, { once: true });
    }
  }

  /** The oldest waiter, disarmed; undefined when none. */
  take(): Waiter | undefined {
    const w = this.items.shift();
    if (w !== undefined) disarm(w);
    return w;
  }

  /** Every waiter, disarmed (to reject them all). */
  takeAll(): Waiter[] {
    const all = this.items;
    this.items = [];
    for (const w of all) disarm(w);
    return all;
  }

  private remove(w: Waiter): void {
    const i = this.items.indexOf(w);
    if (i >= 0) this.items.splice(i, 1);
    disarm(w);
  }
}

function disarm(w: Waiter): void {
  if (w.timer !== null) clearTimeout(w.timer);
  w.timer = null;
  if (w.onAbort !== null) w.signal?.removeEventListener('abort', w.onAbort);
  w.onAbort = null;
}

export function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error) return reason;
  const e = new Error('acquiring a QUIC session stream was aborted');
  e.name = 'AbortError';
  return e;
}

/**
 * Gives back a stream that was acquired but will not be used: FIN without data (the pooler sees
 * an empty session and closes it). Not destroy(): a reset the server meets before its first read
 * of the stream currently surfaces there as an unhandled 'error' (transport issue, reported).
 */
export function discardStream(s: QuicSessionStream): void {
  s.on('error', () => undefined);
  s.resume();
  s.end();
}
