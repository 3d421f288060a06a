// Cancel requests from anywhere: a CancelRequest with one of our keys cancels the request its
// session runs now (forwarded to the server of that connection with the backend's real key), and
// a key of another worker's session goes to that worker. Counted for SHOW WORKERS.
import type { Clock } from '../runtime/clock.js';
import type { ServerAddress } from '../backend/dial.js';
import type { CancelKey } from '../session/types.js';
import type { PeerMessage, Peers } from '../workers/peers.js';
import { CancelRegistry, forwardCancel } from './cancel-registry.js';

/** A session as cancels see it: the server key of the request it runs now, or null. */
export interface Cancellable {
  runningRequest(): CancelKey | null;
}

export class Cancels<T extends Cancellable> {
  private readonly keys: CancelRegistry<T>;
  private readonly pending = new Set<Promise<void>>();
  requestsTotal = 0;
  forwardedTotal = 0;

  constructor(
    private readonly worker: number,
    workers: number,
    private readonly peers: () => Peers,
    /** Where a key without a server of its own goes, and the deadline to reach it. */
    private readonly server: () => ServerAddress & { readonly connectTimeoutMs: number },
    private readonly clock: Clock,
  ) {
    this.keys = new CancelRegistry<T>(worker, workers);
  }

  register(session: T, protocolMinor: number): CancelKey {
    return this.keys.register(session, protocolMinor);
  }

  unregister(processId: number): void {
    this.keys.unregister(processId);
  }

  /** A CancelRequest with one of our keys (possibly another worker's: the key names it). */
  cancel(processId: number, secretKey: Buffer): void {
    this.requestsTotal++;
    const owner = this.keys.workerOf(processId);
    if (owner !== this.worker) return this.peers().post({ type: 'cancel', to: owner, processId, secretKey });
    this.cancelHere(processId, secretKey);
  }

  /** Another worker's message, when it is a cancel for this one (true: it was a cancel). */
  receive(m: PeerMessage): boolean {
    if (m.type !== 'cancel') return false;
    if (m.to === this.worker) this.cancelHere(m.processId, Buffer.from(m.secretKey));
    return true;
  }

  /** Resolves once every cancel sent has been answered (or given up). */
  async settled(): Promise<void> {
    await Promise.all([...this.pending]);
  }

  private cancelHere(processId: number, secretKey: Buffer): void {
    const target = this.keys.lookup(processId, secretKey)?.runningRequest() ?? null;
    if (target === null) return;
    this.forwardedTotal++;
    const server = this.server();
    const p = forwardCancel(target.server ?? server, target, server.connectTimeoutMs, this.clock);
    this.pending.add(p);
    void p.then(() => this.pending.delete(p));
  }
}
