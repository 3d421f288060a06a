// TLS options for session streams, and how their outcome is reported. Verification is on by
// default everywhere: a pooler that silently accepts any certificate protects nothing.
import type tls from 'node:tls';
import type { TlsDetails } from '../session-stream.js';
import { peerCertificateFromDer } from '../peer-certificate.js';
import type { PeerCertificate } from '../peer-certificate.js';

type Pem = string | Buffer | Array<string | Buffer>;

/**
 * ALPN offered/accepted by default: 'postgresql' is the identifier PostgreSQL 17 requires for
 * direct SSL (`sslnegotiation=direct`) and tolerates after an SSLRequest. The QUIC mapping uses
 * its own identifier (see quic/README.md).
 */
export const DEFAULT_TLS_ALPN: readonly string[] = ['postgresql'];

export interface TlsServerOptions {
  cert: Pem;
  key: Pem;
  /** CAs that client certificates must chain to (only used with requestCert). */
  ca?: Pem;
  /**
   * Ask for a client certificate. Default false. A certificate that verifies against `ca` shows
   * as `info.tls.peerCertificate`.
   */
  requestCert?: boolean;
  /**
   * With requestCert: refuse (fail the handshake of) clients without a valid certificate. Default
   * true. With false, clients without one (or with one that does not verify) are accepted and their
   * `info.tls.peerCertificate` is null, so the application refuses them (the pooler's `cert`
   * authentication answers 28000).
   */
  rejectUnauthorized?: boolean;
  /**
   * ALPN protocols accepted, in preference order. Default ['postgresql']. A client offering
   * only other protocols is refused (no_application_protocol); a client offering none is
   * accepted (pg's SSLRequest path sends none) and `info.tls.alpnProtocol` is null.
   * Pass [] to disable ALPN.
   */
  alpnProtocols?: readonly string[];
  /** Minimum TLS version. Default 'TLSv1.2'. */
  minVersion?: tls.SecureVersion;
  /** Abort a handshake that takes longer than this. Default 10 000 ms. */
  handshakeTimeoutMs?: number;
}

export interface TlsClientOptions {
  /** CAs the server certificate must chain to. Default: Node's bundled public roots. */
  ca?: Pem;
  /**
   * Name checked against the server certificate and sent as SNI. Default: the dialed host
   * (for an IP address, no SNI is sent and the certificate must carry that IP).
   */
  servername?: string;
  /** Verify the server certificate and name. Default true; false is for tests only. */
  rejectUnauthorized?: boolean;
  /** ALPN protocols offered. Default ['postgresql']; [] offers none. */
  alpnProtocols?: readonly string[];
  /** Client certificate and key, for servers that ask for one. */
  cert?: Pem;
  key?: Pem;
  minVersion?: tls.SecureVersion;
  handshakeTimeoutMs?: number;
}

/**
 * `authorized` is the verification outcome: a client socket's own `authorized`, or on a server
 * `clientCertificateVerified` (node sets `authorized` only on sockets a tls.Server created).
 */
export function tlsDetails(socket: tls.TLSSocket, servername: string | null, authorized = socket.authorized): TlsDetails {
  const alpn = socket.alpnProtocol;
  // The DER is taken now (the socket forgets it once closed) and parsed on first access only.
  const raw = authorized ? (socket.getPeerCertificate(false) as { raw?: Buffer } | null)?.raw : undefined;
  let peer: PeerCertificate | null | undefined = raw === undefined ? null : undefined;
  return {
    protocol: socket.getProtocol(),
    alpnProtocol: typeof alpn === 'string' ? alpn : null,
    authorized,
    servername,
    get peerCertificate(): PeerCertificate | null {
      peer ??= peerCertificateFromDer(raw);
      return peer;
    },
  };
}

export function alpnList(protocols: readonly string[] | undefined): string[] | undefined {
  const list = protocols ?? DEFAULT_TLS_ALPN;
  return list.length === 0 ? undefined : [...list];
}

/**
 * Server side: whether the client presented a certificate that verified against the configured
 * CA. Node computes this only for sockets a tls.Server accepted (its `onServerSocketSecure` asks
 * the handle for OpenSSL's verify result); our sockets wrap a session stream, so we ask the same
 * handle. OpenSSL reports success when no certificate was sent at all, hence the second check.
 */
export function clientCertificateVerified(socket: tls.TLSSocket, requested: boolean): boolean {
  if (!requested) return false;
  const handle = (socket as unknown as { _handle?: { verifyError?: () => Error | null | undefined } })._handle;
  if (handle === undefined || typeof handle.verifyError !== 'function') return false;
  if (handle.verifyError() != null) return false;
  const peer = socket.getPeerCertificate(false) as { raw?: Buffer } | null;
  return peer?.raw !== undefined;
}
