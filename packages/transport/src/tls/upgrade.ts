// Starting TLS on an already-connected session stream, both ways. This is what the pooler does
// after answering a client's SSLRequest with 'S' (server side) and what a client does after the
// server answered 'S' (client side); the TLS listener and dialer use the same two functions.
import net from 'node:net';
import tls from 'node:tls';
import type { SessionStream } from '../session-stream.js';
import { TransportError } from '../session-stream.js';
import { adoptSocket, dialError, errorCode } from '../tcp/socket-stream.js';
import type { TlsClientOptions, TlsServerOptions } from './options.js';
import { alpnList, clientCertificateVerified, tlsDetails } from './options.js';

// Building a SecureContext parses keys and certificates (~1 ms); do it once per options object.
const serverContexts = new WeakMap<TlsServerOptions, tls.SecureContext>();
const clientContexts = new WeakMap<TlsClientOptions, tls.SecureContext>();

function serverContext(options: TlsServerOptions): tls.SecureContext {
  let context = serverContexts.get(options);
  if (context === undefined) {
    context = tls.createSecureContext({
      cert: options.cert,
      key: options.key,
      ...(options.ca !== undefined ? { ca: options.ca } : {}),
      minVersion: options.minVersion ?? 'TLSv1.2',
    });
    serverContexts.set(options, context);
  }
  return context;
}

function clientContext(options: TlsClientOptions): tls.SecureContext {
  let context = clientContexts.get(options);
  if (context === undefined) {
    context = tls.createSecureContext({
      ...(options.ca !== undefined ? { ca: options.ca } : {}),
      ...(options.cert !== undefined ? { cert: options.cert } : {}),
      ...(options.key !== undefined ? { key: options.key } : {}),
      minVersion: options.minVersion ?? 'TLSv1.2',
    });
    clientContexts.set(options, context);
  }
  return context;
}

/**
 * Server side: runs the TLS handshake on `stream` and resolves with the TLS session stream once it
 * completes. `stream` must hold no unread bytes that belong to TLS: with a TCP stream, TLS reads
 * from the socket handle directly, so anything already read into the JS buffer is not seen.
 * Rejects with a TransportError (and destroys `stream`) on handshake failure or timeout.
 */
export function upgradeToTls(stream: SessionStream, options: TlsServerOptions): Promise<SessionStream> {
  const alpn = alpnList(options.alpnProtocols);
  const socket = new tls.TLSSocket(stream, {
    isServer: true,
    secureContext: serverContext(options),
    requestCert: options.requestCert ?? false,
    rejectUnauthorized: options.rejectUnauthorized ?? true,
    ...(alpn !== undefined ? { ALPNProtocols: alpn } : {}),
  });
  return handshake(socket, 'secure', stream, options.handshakeTimeoutMs, 'tls accept', () => {
    const servername = (socket as tls.TLSSocket & { servername?: string | false }).servername;
    const verified = clientCertificateVerified(socket, options.requestCert ?? false);
    return tlsDetails(socket, typeof servername === 'string' ? servername : null, verified);
  });
}

/**
 * Client side: runs the TLS handshake over `stream`, verifying the server (on by default).
 * `host` is the dialed host, used for the name check when `servername` is not given.
 */
export function upgradeToTlsClient(
  stream: SessionStream,
  options: TlsClientOptions & { host?: string },
): Promise<SessionStream> {
  const name = options.servername ?? options.host ?? stream.info.remoteAddress;
  const alpn = alpnList(options.alpnProtocols);
  const socket = tls.connect({
    socket: stream,
    secureContext: clientContext(options),
    rejectUnauthorized: options.rejectUnauthorized ?? true,
    // SNI must not carry an IP address (RFC 6066); the name check still uses `host`.
    ...(net.isIP(name) === 0 ? { servername: name } : {}),
    host: name,
    ...(alpn !== undefined ? { ALPNProtocols: alpn } : {}),
  });
  return handshake(socket, 'secureConnect', stream, options.handshakeTimeoutMs, `tls connect to ${name}`, () =>
    tlsDetails(socket, name),
  );
}

function handshake(
  socket: tls.TLSSocket,
  // Server TLSSockets signal a finished handshake with 'secure', client ones with 'secureConnect'.
  done: 'secure' | 'secureConnect',
  inner: SessionStream,
  timeoutMs: number | undefined,
  what: string,
  details: () => ReturnType<typeof tlsDetails>,
): Promise<SessionStream> {
  // An error of the inner stream (a reset memory or QUIC stream; a TCP socket's errors mostly
  // surface through TLS itself) must end the TLS stream with that error, not crash the process
  // as an unhandled 'error' on a stream nobody listens to any more.
  inner.on('error', (error: Error) => {
    if (!socket.destroyed) socket.destroy(error);
  });
  return new Promise<SessionStream>((resolve, reject) => {
    const fail = (error: unknown): void => {
      clearTimeout(timer);
      socket.destroy();
      inner.destroy();
      reject(handshakeError(what, error));
    };
    const timer = setTimeout(
      () => fail(new TransportError(`${what}: handshake timed out`, 'ETIMEDOUT')),
      timeoutMs ?? 10_000,
    );
    socket.once('error', fail);
    socket.once(done, () => {
      clearTimeout(timer);
      // Hand the stream over one event-loop turn later. A TLS 1.3 server sends its session
      // tickets as the handshake completes; an RST that reaches the peer together with such
      // unread bytes is reported by libuv as a plain EOF (EPOLLHUP after a partial read), so an
      // abort right away could look like a clean close. The turn costs microseconds.
      setImmediate(() => {
        socket.off('error', fail);
        if (socket.destroyed) {
          reject(new TransportError(`${what}: closed right after the handshake`, 'ECONNRESET'));
          return;
        }
        const info = { ...inner.info, kind: 'tls' as const, tls: details() };
        resolve(adoptSocket(socket, 'tls', info.tls, inner, info));
      });
    });
  });
}

/** Certificate verification failures get their own code so callers can tell them apart. */
function handshakeError(what: string, error: unknown): TransportError {
  if (error instanceof TransportError) return error;
  const code = errorCode(error) ?? '';
  if (/CERT|SIGNATURE|ISSUER|SELF_SIGNED|CHAIN|ALTNAME/.test(code) && !code.startsWith('ERR_SSL_')) {
    const detail = error instanceof Error ? error.message : String(error);
    return new TransportError(`${what}: peer certificate rejected (${code}): ${detail}`, 'ERR_TLS_CERT', { cause: error });
  }
  return dialError(`${what}: handshake failed`, error);
}
