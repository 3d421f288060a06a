// upstream.tls* -> the engine's ServerTlsConfig: the mode and the PEM files read once at start
// (these keys need a restart). A file that cannot be read is a config error naming its key.
import { readFile } from 'node:fs/promises';
import type { ServerTlsConfig } from '@quicpool/pooler';
import { ConfigFileError } from './load.js';
import type { AppConfig } from './load.js';

type FileKey = 'upstream.tls_ca_file' | 'upstream.tls_cert_file' | 'upstream.tls_key_file';

async function pem(c: AppConfig, source: string, key: FileKey): Promise<string | undefined> {
  const path = c.get<string | null>(key);
  if (path === null) return undefined;
  try {
    return await readFile(path, 'utf8');
  } catch (e) {
    throw new ConfigFileError(source, key, `cannot read ${path}: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/** undefined for upstream.tls = "disable" (then the other tls keys must be unset). */
export async function upstreamTls(c: AppConfig, source: string): Promise<ServerTlsConfig | undefined> {
  const mode = c.get<'disable' | 'require' | 'verify-full'>('upstream.tls');
  if (mode === 'disable') {
    for (const key of ['upstream.tls_ca_file', 'upstream.tls_server_name', 'upstream.tls_cert_file', 'upstream.tls_key_file'] as const) {
      if (c.get<string | null>(key) !== null) throw new ConfigFileError(source, key, 'set, but upstream.tls is "disable" (set upstream.tls = "verify-full" or "require")');
    }
    return undefined;
  }
  const servername = c.get<string | null>('upstream.tls_server_name');
  const [ca, cert, key] = await Promise.all([pem(c, source, 'upstream.tls_ca_file'), pem(c, source, 'upstream.tls_cert_file'), pem(c, source, 'upstream.tls_key_file')]);
  return {
    mode,
    ...(ca !== undefined ? { ca } : {}),
    ...(servername !== null ? { servername } : {}),
    ...(cert !== undefined ? { cert } : {}),
    ...(key !== undefined ? { key } : {}),
  };
}
