// Connections this endpoint closed, remembered briefly by routing key so that a peer that missed
// our CONNECTION_CLOSE (lost, or dropped by its full receive buffer) gets it again when it sends
// more packets (RFC 9000 10.2.1: the closing state). quiche 0.18 sends the CLOSE once and then
// forgets the connection's packets, so this is the only repeat. Replies back off: after the 1st,
// 2nd, 4th, 8th ... packet of a closed connection. Bounded in time and count. A connection that
// quiche closed itself (a failed handshake, a timeout) has no kept CLOSE: its late packets are
// dropped quietly, never answered with a stateless reset that would hide the real reason.
import type { Peer } from '../io/peer.js';

/** How long a closed connection's CLOSE is kept for repeats. */
export const CLOSED_ROUTE_MS = 3_000;
/** At most this many closed connections are remembered (oldest forgotten first). */
export const MAX_CLOSED_ROUTES = 10_000;

interface Closed {
  packet: Buffer | null;
  to: Peer | null;
  rx: number;
  until: number;
}

export class ClosedRoutes {
  private readonly byKey = new Map<number, Closed>();

  get size(): number {
    return this.byKey.size;
  }

  add(key: number, packet: Buffer | null, to: Peer | null, now: number): void {
    this.byKey.delete(key);
    this.byKey.set(key, { packet, to, rx: 0, until: now + CLOSED_ROUTE_MS });
    if (this.byKey.size > MAX_CLOSED_ROUTES) {
      const oldest = this.byKey.keys().next();
      if (oldest.done !== true) this.byKey.delete(oldest.value);
    }
  }

  /** Closed connections whose CLOSE may still be repeated (what a forced close lingers for). */
  get echoing(): number {
    let n = 0;
    for (const e of this.byKey.values()) if (e.packet !== null) n++;
    return n;
  }

  has(key: number): boolean {
    return this.byKey.has(key);
  }

  /** The CLOSE to send for a packet routed by `key`, or null (unknown, expired, backing off). */
  echoFor(key: number, now: number): { packet: Buffer; to: Peer } | null {
    const e = this.byKey.get(key);
    if (e === undefined) return null;
    if (now > e.until) {
      this.byKey.delete(key);
      return null;
    }
    const n = ++e.rx;
    return (n & (n - 1)) === 0 && e.packet !== null && e.to !== null ? { packet: e.packet, to: e.to } : null;
  }

  expire(now: number): void {
    for (const [k, e] of this.byKey) if (now > e.until) this.byKey.delete(k);
  }
}
