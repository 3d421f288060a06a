// Development certificates: a throwaway CA and a server certificate it signs, so tests (TLS and
// QUIC) and the pooler's dev mode verify certificates exactly as production does instead of
// turning verification off. Not for production: the CA key is thrown away.
import { X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';

export interface DevCertificateOptions {
  /**
   * DNS names and IP addresses the server certificate is valid for; the first is its common
   * name. Default ['localhost', '127.0.0.1', '::1'].
   */
  names?: readonly string[];
  /** Validity in days from now. Default 30. */
  days?: number;
  /**
   * Common name of the generated CA. Default 'quicpool development CA'. Give CAs that are trusted
   * together (a client CA bundle) distinct names: certificate stores find issuers by name.
   */
  caName?: string;
}

export interface DevCertificates {
  /** The CA certificate clients trust (pass as `ca`). */
  caPem: string;
  /** The server certificate, signed by the CA. */
  certPem: string;
  /** The server certificate's private key (PKCS#8). */
  keyPem: string;
  /** SHA-256 fingerprint of the server certificate, colon-separated hex (as openssl prints it). */
  fingerprint: string;
}

/**
 * Generates an EC P-256 CA and a server certificate for `names`, signed with SHA-256. EC keys
 * make generation take milliseconds (RSA 2048 takes ~100 ms) and work with quiche's BoringSSL.
 */
export async function generateDevCertificates(options: DevCertificateOptions = {}): Promise<DevCertificates> {
  const names = options.names ?? ['localhost', '127.0.0.1', '::1'];
  const first = names[0];
  if (first === undefined) throw new Error('generateDevCertificates: names must not be empty');
  const notBeforeDate = new Date(Date.now() - 60_000); // tolerate small clock skew
  const notAfterDate = new Date(notBeforeDate.getTime() + (options.days ?? 30) * 86_400_000);
  const common = { keyType: 'ec' as const, curve: 'P-256' as const, algorithm: 'sha256', notBeforeDate, notAfterDate };
  // Loaded on first use: selfsigned pulls in an X.509/ASN.1 stack that costs 0.2-0.7 s to import,
  // which every importer of this package (the daemon's start) would otherwise pay.
  const { generate } = await import('selfsigned');

  const ca = await generate([{ name: 'commonName', value: options.caName ?? 'quicpool development CA' }], {
    ...common,
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    ],
  });
  const server = await generate([{ name: 'commonName', value: first }], {
    ...common,
    ca: { key: ca.private, cert: ca.cert },
    extensions: [
      { name: 'basicConstraints', cA: false, critical: true },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true, clientAuth: true },
      {
        name: 'subjectAltName',
        altNames: names.map((name) => (isIP(name) === 0 ? { type: 2 as const, value: name } : { type: 7 as const, ip: name })),
      },
    ],
  });
  return {
    caPem: ca.cert,
    certPem: server.cert,
    keyPem: server.private,
    fingerprint: new X509Certificate(server.cert).fingerprint256,
  };
}
