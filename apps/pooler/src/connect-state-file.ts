// The small JSON files `quicpool connect` keeps between runs (session tickets, login answers):
// read if they look like ours, written whole (a temporary file renamed over the old one), mode 600
// in a 700 directory. Losing one costs the next start its head start, nothing else.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/** A larger file is not ours: ignored. */
const MAX_FILE_BYTES = 1 << 20;

/** The file's JSON object, or null when it is missing, unreadable, too large or not an object. */
export function readStateFile(path: string): Record<string, unknown> | null {
  try {
    const text = readFileSync(path, 'utf8');
    if (text.length > MAX_FILE_BYTES) return null;
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : null;
  } catch {
    return null; // none yet, or unreadable: start empty
  }
}

/** Replaces the file with `data` as JSON; failures are ignored (see above). */
export function writeStateFile(path: string, data: Record<string, unknown>): void {
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    const tmp = `${path}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(data), { mode: 0o600 });
    renameSync(tmp, path);
  } catch {
    // A file not saved costs the next start its 0-RTT or fast start, nothing else.
  }
}
