// Reaching the real PostgreSQL server, through the transport like every other byte: TCP, or the
// server's unix socket when `host` is a directory (as libpq does), and TLS after SSLRequest when
// upstream TLS is configured (verify-full by default: the certificate must chain to `ca` and
// carry the server's name). Used for backend logins and for forwarded CancelRequests alike.
import { dialTcp, dialUnix, TransportError, upgradeToTlsClient } from '@quicpool/transport';
import type { ReadInto, SessionStream } from '@quicpool/transport';
import { encodeStartupPacket } from '@quicpool/wire';

/** TLS to the server (Postgres's sslmode, the two that mean something for a pooler). */
export interface ServerTls {
  /** 'verify-full' (default): chain to `ca` and name checked; 'require': encrypted, not verified. */
  readonly mode: 'require' | 'verify-full';
  /** CAs the server certificate must chain to (PEM); default Node's bundled public roots. */
  readonly ca?: string;
  /** Name the certificate must carry; default `host`. */
  readonly servername?: string;
  /** Client certificate and key, for servers that ask for one (`clientcert` in pg_hba.conf). */
  readonly cert?: string;
  readonly key?: string;
}

export interface ServerAddress {
  /** Host name or IP, or a directory holding the server's unix socket (`.s.PGSQL.<port>`). */
  readonly host: string;
  readonly port: number;
  readonly tls?: ServerTls;
}

export interface DialedServer {
  readonly stream: SessionStream;
  /** The stream's bytes go to `readInto` (no 'data' events); false for TLS, which reads its own. */
  readonly readsInto: boolean;
}

/** The unix socket path of a server whose host is a directory, else null. */
export function unixSocketPath(address: ServerAddress): string | null {
  return address.host.startsWith('/') ? `${address.host.replace(/\/+$/, '')}/.s.PGSQL.${address.port}` : null;
}

/** The same server (host and port; TLS settings aside). */
export function sameServer(a: ServerAddress, b: ServerAddress): boolean {
  return a.host === b.host && a.port === b.port;
}

/** "host:port" or the socket path, for messages. */
export function describeServer(address: ServerAddress): string {
  return unixSocketPath(address) ?? `${address.host}:${address.port}`;
}

const SSL_REQUEST = encodeStartupPacket({ type: 'SSLRequest' });
/** The server's one-byte answers to SSLRequest. */
const SSL_ACCEPTED = 0x53; // 'S'
const SSL_REFUSED = 0x4e; // 'N'

/**
 * Connects to the server; with TLS configured, asks for it (SSLRequest) and completes the
 * handshake before returning. `readInto` is used for plain TCP and unix sockets only.
 */
export async function dialServer(address: ServerAddress, o: { connectTimeoutMs: number; readInto?: ReadInto }): Promise<DialedServer> {
  const path = unixSocketPath(address);
  const tls = address.tls;
  const readInto = tls === undefined ? o.readInto : undefined;
  const base = { connectTimeoutMs: o.connectTimeoutMs, ...(readInto !== undefined ? { readInto } : {}) };
  const stream = path !== null ? await dialUnix({ path, ...base }) : await dialTcp({ host: address.host, port: address.port, ...base });
  if (tls === undefined) return { stream, readsInto: readInto !== undefined };
  try {
    await askForTls(stream, address);
    const secure = await upgradeToTlsClient(stream, {
      host: address.host,
      ...(tls.servername !== undefined ? { servername: tls.servername } : {}),
      ...(tls.ca !== undefined ? { ca: tls.ca } : {}),
      ...(tls.cert !== undefined ? { cert: tls.cert } : {}),
      ...(tls.key !== undefined ? { key: tls.key } : {}),
      rejectUnauthorized: tls.mode === 'verify-full',
      // Postgres takes TLS after SSLRequest without ALPN (it wants 'postgresql' only for direct TLS).
      alpnProtocols: [],
      handshakeTimeoutMs: o.connectTimeoutMs,
    });
    return { stream: secure, readsInto: false };
  } catch (e) {
    stream.destroy();
    throw e;
  }
}

/**
 * SSLRequest, then the server's one-byte answer: 'S' goes on with TLS, 'N' is a refusal. Bounded
 * by the caller's login timeout, which destroys the stream.
 */
function askForTls(stream: SessionStream, address: ServerAddress): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const finish = (error: Error | null): void => {
      stream.off('data', onData);
      stream.off('error', onError);
      stream.off('close', onClose);
      if (error === null) resolve();
      else reject(error);
    };
    const onData = (chunk: Buffer): void => {
      // Nothing follows the answer until our ClientHello: more bytes would be a broken server.
      stream.pause();
      if (chunk.length === 1 && chunk[0] === SSL_ACCEPTED) return finish(null);
      if (chunk.length === 1 && chunk[0] === SSL_REFUSED) {
        return finish(new TransportError(`the server at ${describeServer(address)} does not accept TLS, and upstream TLS is required`, 'ECONNREFUSED'));
      }
      finish(new TransportError(`the server at ${describeServer(address)} answered SSLRequest with ${chunk.length} unexpected bytes`, 'ECONNRESET'));
    };
    const onError = (e: Error): void => finish(e);
    const onClose = (): void => finish(new TransportError(`the server at ${describeServer(address)} closed the connection after SSLRequest`, 'ECONNRESET'));
    stream.on('data', onData);
    stream.once('error', onError);
    stream.once('close', onClose);
    stream.write(SSL_REQUEST);
  });
}
