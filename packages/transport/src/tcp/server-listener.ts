// The SessionListener shared by TCP and TLS: both are a net.Server (tls.Server extends it) whose
// accepted sockets become session streams. Tracks open sessions so close() can either let them
// finish (graceful) or abort them so every peer sees ECONNRESET at once.
import type net from 'node:net';
import type { SessionListener, SessionStream, TransportKind } from '../session-stream.js';
import { abortSocket } from './socket-stream.js';

export class ServerListener implements SessionListener {
  private handler: ((stream: SessionStream) => void) | null = null;
  /** Sessions accepted before onSession() was called; handed over when it is. */
  private readonly backlog: SessionStream[] = [];
  private readonly open = new Set<SessionStream>();
  /** Connections still in a handshake (TLS): not sessions yet, but close() must end them too. */
  private readonly pending = new Set<net.Socket>();
  private closing: Promise<void> | null = null;

  constructor(
    readonly kind: TransportKind,
    private readonly server: net.Server,
  ) {}

  /** Called by the transport for every connected (and, for TLS, handshaken) socket. */
  accept(stream: SessionStream): void {
    if (this.closing !== null) {
      stream.destroy();
      return;
    }
    this.open.add(stream);
    stream.once('close', () => this.open.delete(stream));
    if (this.handler !== null) this.handler(stream);
    else this.backlog.push(stream);
  }

  /** Tracks a connection that is not a session yet; call the returned function when it is done. */
  holdPending(socket: net.Socket): () => void {
    this.pending.add(socket);
    return () => this.pending.delete(socket);
  }

  address(): { address: string; port: number } {
    const bound = this.server.address();
    if (bound === null || typeof bound === 'string') throw new Error(`${this.kind} listener is not bound to a TCP port`);
    return { address: bound.address, port: bound.port };
  }

  onSession(handler: (stream: SessionStream) => void): void {
    this.handler = handler;
    for (const stream of this.backlog.splice(0)) {
      if (!stream.destroyed) handler(stream);
    }
  }

  /** Number of sessions currently open (for stats and tests). */
  get sessionCount(): number {
    return this.open.size;
  }

  close(options: { graceful?: boolean } = {}): Promise<void> {
    if (this.closing !== null) return this.closing;
    this.closing = new Promise<void>((resolve) => {
      // server.close() resolves once every accepted connection has closed.
      this.server.close(() => resolve());
      if (options.graceful !== true) {
        // Abort (peer sees ECONNRESET) without a local 'error': a session may have no handler yet.
        for (const stream of this.open) abortSocket(stream as unknown as net.Socket);
        for (const socket of this.pending) abortSocket(socket);
      }
    });
    return this.closing;
  }
}

/** Resolves once `server` listens: on host:port (port 0 picks a free port), or on a socket's `fd`. */
export function listenOn(server: net.Server, where: { host: string; port: number; backlog?: number | undefined } | { fd: number }): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const onError = (error: Error): void => reject(error);
    server.once('error', onError);
    server.listen(where, () => {
      server.off('error', onError);
      resolve();
    });
  });
}
