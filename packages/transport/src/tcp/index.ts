// Plain TCP session streams: one net.Socket per session, TCP_NODELAY on (Postgres messages are
// small and latency-bound; Nagle would hold a query behind the previous ACK).
import net from 'node:net';
import type { ReadInto, SessionDialer, SessionListener, SessionStream } from '../session-stream.js';
import { ServerListener, listenOn } from './server-listener.js';
import { connectSocket, trackingDialer } from './dial.js';
import { adoptSocket } from './socket-stream.js';

export { adoptSocket, abortSocket } from './socket-stream.js';

export interface TcpListenOptions {
  /** Default '127.0.0.1' (loopback; listen on '0.0.0.0' or '::' explicitly). */
  host?: string;
  /** Default 0: the OS picks a free port; read it from `address()`. */
  port?: number;
  /** TCP_NODELAY on accepted sockets. Default true. */
  noDelay?: boolean;
  /** Enable TCP keep-alive with this initial delay in ms; default off. */
  keepAliveMs?: number;
  /** listen(2) backlog; default Node's (511). */
  backlog?: number;
  /**
   * Listen on this already bound and listening socket instead of host:port (a member of a
   * reuseport group: give a dup, the listener closes it on close()).
   */
  fd?: number;
}

export async function listenTcp(options: TcpListenOptions = {}): Promise<SessionListener> {
  const noDelay = options.noDelay ?? true;
  const server = net.createServer({
    // A session stream half-closes (end() is FIN, the peer may still answer), like QUIC streams.
    allowHalfOpen: true,
    noDelay,
    keepAlive: options.keepAliveMs !== undefined,
    keepAliveInitialDelay: options.keepAliveMs ?? 0,
  });
  const listener = new ServerListener('tcp', server);
  server.on('connection', (socket) => {
    // A connection reset before we adopt it has no address; drop it instead of emitting.
    if (socket.remoteAddress === undefined) {
      socket.destroy();
      return;
    }
    listener.accept(adoptSocket(socket, 'tcp'));
  });
  await listenOn(server, options.fd !== undefined ? { fd: options.fd } : { host: options.host ?? '127.0.0.1', port: options.port ?? 0, backlog: options.backlog });
  return listener;
}

export interface TcpDialOptions {
  host: string;
  port: number;
  /** Reads go to the caller's buffer (see `ReadInto`); default: 'data' events as usual. */
  readInto?: ReadInto;
  /** TCP_NODELAY. Default true. */
  noDelay?: boolean;
  keepAliveMs?: number;
  localAddress?: string;
  /** Give up connecting after this long (TransportError ETIMEDOUT). Default 10 000 ms. */
  connectTimeoutMs?: number;
}

export async function dialTcp(options: TcpDialOptions): Promise<SessionStream> {
  return adoptSocket(await connectSocket(options), 'tcp');
}

export interface UnixDialOptions {
  /** The socket file (Postgres: `<directory>/.s.PGSQL.<port>`). */
  path: string;
  readInto?: ReadInto;
  /** Give up connecting after this long (TransportError ETIMEDOUT). Default 10 000 ms. */
  connectTimeoutMs?: number;
}

/** A session stream over a unix-domain socket: behaves as a TCP one; `info` names the path. */
export async function dialUnix(options: UnixDialOptions): Promise<SessionStream> {
  const socket = await connectSocket(options);
  const info = {
    kind: 'unix' as const,
    localAddress: '',
    localPort: 0,
    remoteAddress: options.path,
    remotePort: 0,
    tls: null,
    quic: null,
  };
  return adoptSocket(socket, 'unix', null, undefined, info);
}

/**
 * A dialer for one TCP peer. TCP has no shared connection, so close() stops further opens and
 * aborts the streams this dialer opened that are still open (as closing a QUIC connection would).
 */
export function createTcpDialer(options: TcpDialOptions): SessionDialer {
  return trackingDialer('tcp', () => dialTcp(options));
}
