// TLS over TCP session streams. Every TLS stream is built over a net.Socket we keep (so an abort
// can send RST) by the same upgrade functions the pooler uses after an SSLRequest.
import net from 'node:net';
import type { SessionDialer, SessionListener, SessionStream } from '../session-stream.js';
import type { TcpDialOptions, TcpListenOptions } from '../tcp/index.js';
import { connectSocket, trackingDialer } from '../tcp/dial.js';
import { ServerListener, listenOn } from '../tcp/server-listener.js';
import { adoptSocket } from '../tcp/socket-stream.js';
import type { TlsClientOptions, TlsServerOptions } from './options.js';
import { upgradeToTls, upgradeToTlsClient } from './upgrade.js';

export type { TlsClientOptions, TlsServerOptions } from './options.js';
export { DEFAULT_TLS_ALPN } from './options.js';
export { upgradeToTls, upgradeToTlsClient } from './upgrade.js';

export type TlsListenOptions = TcpListenOptions & TlsServerOptions;

/**
 * Listens for direct TLS (the TLS handshake is the first thing on the connection, as with
 * Postgres 17's `sslnegotiation=direct`). Sessions are emitted once their handshake succeeds;
 * failed handshakes are dropped and counted in `failedHandshakes`.
 */
export async function listenTls(options: TlsListenOptions): Promise<SessionListener & { readonly failedHandshakes: number }> {
  const server = net.createServer({
    // A session stream half-closes (end() is FIN, the peer may still answer), like QUIC streams.
    allowHalfOpen: true,
    noDelay: options.noDelay ?? true,
    keepAlive: options.keepAliveMs !== undefined,
    keepAliveInitialDelay: options.keepAliveMs ?? 0,
  });
  const listener = new TlsServerListener(server);
  server.on('connection', (socket) => {
    if (socket.remoteAddress === undefined) {
      socket.destroy();
      return;
    }
    const release = listener.holdPending(socket);
    upgradeToTls(adoptSocket(socket, 'tcp'), options).then(
      (stream) => {
        release();
        listener.accept(stream);
      },
      () => {
        release();
        listener.failedHandshakes++;
      },
    );
  });
  await listenOn(server, { host: options.host ?? '127.0.0.1', port: options.port ?? 0, backlog: options.backlog });
  return listener;
}

class TlsServerListener extends ServerListener {
  failedHandshakes = 0;
  constructor(server: net.Server) {
    super('tls', server);
  }
}

export type TlsDialOptions = TcpDialOptions & TlsClientOptions;

/** Connects over TCP and runs the TLS handshake (direct TLS, no SSLRequest). */
export async function dialTls(options: TlsDialOptions): Promise<SessionStream> {
  const raw = await connectSocket(options);
  return upgradeToTlsClient(adoptSocket(raw, 'tcp'), options);
}

export function createTlsDialer(options: TlsDialOptions): SessionDialer {
  return trackingDialer('tls', () => dialTls(options));
}
