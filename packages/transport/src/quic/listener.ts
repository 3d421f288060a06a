// The server face of the QUIC transport for the pooler: every client-initiated bidirectional
// stream of every accepted connection becomes one SessionStream.
import type { HandshakeFailure, SessionListener, SessionStream, TransportKind } from '../session-stream.js';
import { QuicEndpoint } from './endpoint.js';
import type { QuicEndpointStats, QuicPathHealth } from './endpoint.js';
import type { QuicServerOptions } from './config.js';
import type { QuicConnection } from './connection.js';
import type { QuicSessionStream } from './stream.js';

export class QuicListener implements SessionListener {
  readonly kind: TransportKind = 'quic';
  private handler: ((s: SessionStream) => void) | null = null;
  /** Sessions that arrived before `onSession` was called (bounded: a listener is used at once). */
  private early: QuicSessionStream[] = [];

  private constructor(readonly endpoint: QuicEndpoint) {
    endpoint.onConnection = (c: QuicConnection) => {
      c.onStream = this.accept;
    };
  }

  static async listen(options: QuicServerOptions): Promise<QuicListener> {
    return new QuicListener(await QuicEndpoint.server(options));
  }

  address(): { address: string; port: number } {
    return this.endpoint.address();
  }

  onSession(handler: (stream: SessionStream) => void): void {
    this.handler = handler;
    const early = this.early;
    this.early = [];
    for (const s of early) if (!s.destroyed) handler(s);
  }

  onHandshakeFailed(handler: (failure: HandshakeFailure) => void): void {
    this.endpoint.onHandshakeFailed = (c: QuicConnection) => {
      const { host, port } = c.remote;
      handler({ remoteAddress: host, remotePort: port, reason: c.error?.message ?? 'closed before the handshake completed' });
    };
  }

  stats(): QuicEndpointStats {
    return this.endpoint.stats();
  }

  /** RTT and loss of the accepted connections (see `QuicEndpoint.pathHealth`). */
  pathHealth(): QuicPathHealth {
    return this.endpoint.pathHealth();
  }

  /** See `QuicEndpoint.close`: graceful by default, `timeoutMs` bounds the wait. */
  close(options: { graceful?: boolean; timeoutMs?: number } = {}): Promise<void> {
    return this.endpoint.close(options);
  }

  private readonly accept = (s: QuicSessionStream): void => {
    if (this.handler !== null) {
      this.handler(s);
    } else if (this.early.length < 1024) {
      this.early.push(s);
    } else {
      s.destroy();
    }
  };
}
