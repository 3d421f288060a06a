// The agent's login cache (what the pooler answered each StartupMessage: the values a fast start
// announces) kept in a file, so a restarted agent fast-starts its first sessions too. The file
// holds parameter values such as server_version and the user names of the StartupMessages.
import { LoginCache } from '@quicpool/client';
import type { LoginRecord } from '@quicpool/client';
import { readStateFile, writeStateFile } from './connect-state-file.js';

export class FileLoginCache extends LoginCache {
  constructor(private readonly path: string) {
    super();
    for (const [key, value] of Object.entries(readStateFile(path) ?? {})) {
      const record = loginRecord(value);
      if (record !== null) super.set(key, record);
    }
  }

  override set(key: string, record: LoginRecord): void {
    super.set(key, record);
    this.save();
  }

  override delete(key: string): void {
    const had = this.get(key) !== undefined;
    super.delete(key);
    if (had) this.save();
  }

  private save(): void {
    writeStateFile(this.path, Object.fromEntries(this.entries()));
  }
}

/** A record as saved, or null for anything else. */
function loginRecord(v: unknown): LoginRecord | null {
  if (typeof v !== 'object' || v === null) return null;
  const { parameters, keyLength } = v as { parameters?: unknown; keyLength?: unknown };
  if (typeof keyLength !== 'number' || !Number.isInteger(keyLength) || keyLength < 4 || keyLength > 256) return null;
  if (!Array.isArray(parameters)) return null;
  const ok = parameters.every((p) => Array.isArray(p) && p.length === 2 && typeof p[0] === 'string' && typeof p[1] === 'string');
  return ok ? { parameters: parameters as [string, string][], keyLength } : null;
}
