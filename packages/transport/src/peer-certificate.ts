// The verified certificate of the other side of a session, reduced to what authorization needs:
// the subject's common name, its alternative names and the SHA-256 fingerprint of the leaf. TLS
// over TCP and QUIC report it the same way (`info.tls.peerCertificate`), so a server maps
// identities without knowing which transport a session came over.
import { X509Certificate } from 'node:crypto';

export interface PeerCertificate {
  /** The subject's CN, or null when the subject carries none. */
  readonly commonName: string | null;
  /** subjectAltName entries as OpenSSL prints them: `DNS:agent-1`, `IP Address:10.0.0.1`, `URI:...`. */
  readonly subjectAltNames: readonly string[];
  /** SHA-256 fingerprint of the leaf certificate (DER), upper-case hex with colons (as `openssl x509 -fingerprint -sha256` prints it). */
  readonly fingerprint256: string;
  /** The full subject and issuer, one `KEY=value` per line (node:crypto's format). */
  readonly subject: string;
  readonly issuer: string;
  /** End of validity, as the certificate states it. */
  readonly validTo: string;
}

/** Longest certificate accepted for parsing (a leaf is ~0.5-2 KiB; anything this big is not one). */
const MAX_CERT_BYTES = 64 * 1024;

/** Parses a DER leaf certificate; null when it is missing, oversized or unparsable. */
export function peerCertificateFromDer(der: Uint8Array | undefined | null): PeerCertificate | null {
  if (der === undefined || der === null || der.length === 0 || der.length > MAX_CERT_BYTES) return null;
  let x: X509Certificate;
  try {
    x = new X509Certificate(der);
  } catch {
    return null;
  }
  return {
    commonName: commonNameOf(x.subject),
    subjectAltNames: splitAltNames(x.subjectAltName),
    fingerprint256: x.fingerprint256,
    subject: x.subject,
    issuer: x.issuer,
    validTo: x.validTo,
  };
}

function commonNameOf(subject: string): string | null {
  for (const line of subject.split('\n')) if (line.startsWith('CN=')) return line.slice(3);
  return null;
}

function splitAltNames(san: string | undefined): string[] {
  if (san === undefined || san === '') return [];
  return san.split(', ');
}

/** `AA:BB:...` upper-case for any spelling of a SHA-256 fingerprint (colons optional, any case); null if it is not one. */
export function canonicalFingerprint256(fp: string): string | null {
  const hex = fp.replace(/[:\s]/g, '').toUpperCase();
  if (!/^[0-9A-F]{64}$/.test(hex)) return null;
  return hex.match(/../g)?.join(':') ?? null;
}
