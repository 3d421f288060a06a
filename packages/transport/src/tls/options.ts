// TLS options for session streams, and how their outcome is reported. Verification is on by
// default everywhere: a pooler that silently accepts any certificate protects nothing.
import type tls from 'node:tls';
import type { TlsDetails } from '../session-stream.js';

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
  /** Ask for a client certificate. Default false. */
  requestCert?: boolean;
  /** With requestCert: refuse clients without a valid certificate. Default true. */
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

export function tlsDetails(socket: tls.TLSSocket, servername: string | null): TlsDetails {
  const alpn = socket.alpnProtocol;
  return {
    protocol: socket.getProtocol(),
    alpnProtocol: typeof alpn === 'string' ? alpn : null,
    authorized: socket.authorized,
    servername,
  };
}

export function alpnList(protocols: readonly string[] | undefined): string[] | undefined {
  const list = protocols ?? DEFAULT_TLS_ALPN;
  return list.length === 0 ? undefined : [...list];
}
