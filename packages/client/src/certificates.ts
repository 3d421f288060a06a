// Server certificate verification for QUIC connections. QUIC runs TLS 1.3 itself, so nothing
// inside a stream negotiates TLS again; this decides only how the pooler's certificate is
// checked: a CA (given, from a file, or Node's bundled roots), a pinned SHA-256 fingerprint, or -
// only when asked for by its loud name - not at all.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import type { QuicConnection } from '@quicpool/transport';
import { TransportError } from '@quicpool/transport';
import type { CertificateOptions } from './options.js';

export interface CertificatePolicy {
  /** PEM CA bundle for quiche; undefined = Node's bundled roots. */
  readonly ca: string | Uint8Array | undefined;
  /** quiche's own verification is off (insecure mode, or pinning checks the leaf afterwards). */
  readonly skipChainVerification: boolean;
  /** Normalized pin (upper-case hex, no colons), or null. */
  readonly pin: string | null;
  readonly insecure: boolean;
  /** Client certificate (PEM chain) and key presented to the pooler, or undefined. */
  readonly clientCert: { readonly cert: string | Uint8Array; readonly key: string | Uint8Array } | undefined;
}

export function certificatePolicy(o: CertificateOptions): CertificatePolicy {
  const insecure = o.dangerouslyAcceptAnyCertificate === true;
  const pin = o.pinnedFingerprint === undefined ? null : normalizeFingerprint(o.pinnedFingerprint);
  if (insecure && pin !== null) throw new RangeError('pinnedFingerprint and dangerouslyAcceptAnyCertificate exclude each other');
  if (o.ca !== undefined && o.caFile !== undefined) throw new RangeError('give ca or caFile, not both');
  const ca = o.caFile !== undefined ? readFileSync(o.caFile, 'utf8') : o.ca;
  if (insecure) {
    process.emitWarning('quicpool: dangerouslyAcceptAnyCertificate is set - the pooler certificate is NOT verified', 'SecurityWarning');
  }
  return { ca, skipChainVerification: insecure || pin !== null, pin, insecure, clientCert: clientCertificate(o) };
}

function clientCertificate(o: CertificateOptions): CertificatePolicy['clientCert'] {
  if (o.cert !== undefined && o.certFile !== undefined) throw new RangeError('give cert or certFile, not both');
  if (o.key !== undefined && o.keyFile !== undefined) throw new RangeError('give key or keyFile, not both');
  const cert = o.certFile !== undefined ? readFileSync(o.certFile, 'utf8') : o.cert;
  const key = o.keyFile !== undefined ? readFileSync(o.keyFile, 'utf8') : o.key;
  if ((cert === undefined) !== (key === undefined)) throw new RangeError('a client certificate needs both cert and key');
  return cert !== undefined && key !== undefined ? { cert, key } : undefined;
}

export function normalizeFingerprint(fp: string): string {
  const hex = fp.replace(/[:\s]/g, '').toUpperCase();
  if (!/^[0-9A-F]{64}$/.test(hex)) throw new RangeError('pinnedFingerprint must be a SHA-256 fingerprint (64 hex digits, colons allowed)');
  return hex;
}

/** The name quiche checks the certificate against (it cannot verify IP addresses). */
export function serverNameFor(host: string, explicit: string | undefined, policy: CertificatePolicy): string {
  if (explicit !== undefined) return explicit;
  if (isIP(host) === 0) return host;
  if (policy.skipChainVerification) return 'localhost';
  throw new RangeError(`serverName is required for endpoint ${host}: QUIC verifies the certificate against a DNS name, not an IP address`);
}

/**
 * With a pin: the leaf certificate the server presented must hash to it. Called once the handshake
 * is complete and before any stream is handed out; null when it matches.
 */
export function checkPin(conn: QuicConnection, policy: CertificatePolicy): TransportError | null {
  if (policy.pin === null) return null;
  const chain = conn.q.peerCertChain();
  const leaf = chain?.[0];
  if (leaf === undefined) return new TransportError('QUIC server presented no certificate to check the pinned fingerprint against', 'ERR_TLS_CERT');
  const got = createHash('sha256').update(leaf).digest('hex').toUpperCase();
  if (got !== policy.pin) {
    return new TransportError(`QUIC server certificate fingerprint ${got} does not match the pinned ${policy.pin}`, 'ERR_TLS_CERT');
  }
  return null;
}
