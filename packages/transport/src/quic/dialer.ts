// The client face: streams to one QUIC server over a small set of connections. Streams go to
// the connection with the most stream credit; a connection that dies is replaced on next use.
import type { SessionDialer, TransportKind } from '../session-stream.js';
import { QuicEndpoint } from './endpoint.js';
import type { QuicClientEndpointOptions, QuicEndpointStats } from './endpoint.js';
import type { QuicConnection } from './connection.js';
import type { QuicSessionStream } from './stream.js';

export interface QuicDialerOptions extends QuicClientEndpointOptions {
  /** QUIC connections to spread streams over. Default 1. */
  connections?: number;
}

export class QuicDialer implements SessionDialer {
  readonly kind: TransportKind = 'quic';
  private endpointP: Promise<QuicEndpoint> | null = null;
  private readonly conns: QuicConnection[] = [];
  private closed = false;

  constructor(private readonly options: QuicDialerOptions) {}

  /** The endpoint (socket) this dialer uses, created on first use. */
  endpoint(): Promise<QuicEndpoint> {
    this.endpointP ??= QuicEndpoint.client(this.options);
    return this.endpointP;
  }

  async stats(): Promise<QuicEndpointStats> {
    return (await this.endpoint()).stats();
  }

  /** A new session stream. Waits for the handshake and for stream credit when needed. */
  async open(): Promise<QuicSessionStream> {
    const ep = await this.endpoint();
    if (this.closed) throw new Error('QuicDialer is closed');
    const c = this.pick(ep);
    const s = await c.openStream();
    return s;
  }

  /** A connection with free stream credit; otherwise a new one while below the limit; else the least loaded. */
  private pick(ep: QuicEndpoint): QuicConnection {
    for (let i = this.conns.length - 1; i >= 0; i--) if (this.conns[i]!.error !== null) this.conns.splice(i, 1);
    let best: QuicConnection | null = null;
    let bestCredit = 0;
    for (const c of this.conns) {
      const credit = c.streamCredit();
      if (credit > bestCredit) {
        best = c;
        bestCredit = credit;
      }
    }
    if (best !== null) return best;
    const max = this.options.connections ?? 1;
    if (this.conns.length < max) {
      const c = ep.connect();
      this.conns.push(c);
      return c;
    }
    // All saturated (or still handshaking): queue on the one with the fewest streams.
    let least = this.conns[0]!;
    for (const c of this.conns) if (c.load < least.load) least = c;
    return least;
  }

  async close(options: { graceful?: boolean; timeoutMs?: number } = {}): Promise<void> {
    this.closed = true;
    if (this.endpointP === null) return;
    const ep = await this.endpointP;
    await ep.close(options);
  }
}
