// Certificates for TLS and QUIC: the configured files, or a development CA + server certificate
// generated once into the state folder (reused on later starts so clients keep trusting the CA).
import { X509Certificate } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { generateDevCertificates } from '@quicpool/transport';
import { ConfigFileError } from './config/load.js';

export interface ServerCertificate {
  readonly certPem: string;
  readonly keyPem: string;
  /** CA file clients should trust (development certificates only). */
  readonly caPath: string | undefined;
  readonly fingerprint: string;
  readonly generated: boolean;
}

export async function loadCertificateFiles(certFile: string, keyFile: string): Promise<ServerCertificate> {
  const certPem = await readFile(certFile, 'utf8');
  const keyPem = await readFile(keyFile, 'utf8');
  return { certPem, keyPem, caPath: undefined, fingerprint: new X509Certificate(certPem).fingerprint256, generated: false };
}

/** Writes (or, when present and `force` is false, reuses) ca.pem, server.pem, server.key in `dir`. */
export async function devCertificates(dir: string, names: readonly string[], force = false): Promise<ServerCertificate> {
  const caPath = resolve(join(dir, 'ca.pem'));
  const certPath = join(dir, 'server.pem');
  const keyPath = join(dir, 'server.key');
  if (!force && existsSync(caPath) && existsSync(certPath) && existsSync(keyPath)) {
    const certPem = await readFile(certPath, 'utf8');
    const x = new X509Certificate(certPem);
    // Regenerate a certificate about to expire (development certificates last 30 days).
    if (new Date(x.validTo).getTime() - Date.now() > 86_400_000) {
      return { certPem, keyPem: await readFile(keyPath, 'utf8'), caPath, fingerprint: x.fingerprint256, generated: false };
    }
  }
  await mkdir(dir, { recursive: true, mode: 0o711 });
  const c = await generateDevCertificates({ names: [...names] });
  await writeFile(caPath, c.caPem, { mode: 0o644 });
  await writeFile(certPath, c.certPem, { mode: 0o644 });
  await writeFile(keyPath, c.keyPem, { mode: 0o600 });
  return { certPem: c.certPem, keyPem: c.keyPem, caPath, fingerprint: c.fingerprint, generated: true };
}

/** tls.client_ca_file, read once at start: a file that cannot be read or holds no certificate is a config error. */
export async function readClientCa(source: string, path: string): Promise<string> {
  let pem: string;
  try {
    pem = await readFile(path, 'utf8');
    new X509Certificate(pem);
  } catch (e) {
    throw new ConfigFileError(source, 'tls.client_ca_file', `cannot read a CA certificate from ${path}: ${e instanceof Error ? e.message : String(e)}`);
  }
  return pem;
}
