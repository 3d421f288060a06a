// Keys every worker shares and a restart keeps: the session ticket key (resumed clients keep
// their 0-RTT) and the stateless reset key (a restarted daemon, or a replacement worker, ends
// the connections it has no state for at once). Kept in the state folder, readable by the
// daemon's user only. The Retry token key is per run: a token is valid for seconds.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

async function stateKey(stateDir: string, file: string, length: number): Promise<Uint8Array> {
  const path = join(stateDir, file);
  if (existsSync(path)) {
    const key = await readFile(path);
    if (key.length === length) return key;
  }
  const key = randomBytes(length);
  await mkdir(stateDir, { recursive: true, mode: 0o711 });
  await writeFile(path, key, { mode: 0o600 });
  return key;
}

export async function quicKeys(stateDir: string): Promise<{ ticketKey: Uint8Array; statelessResetKey: Uint8Array; retryKey: Uint8Array }> {
  return {
    ticketKey: await stateKey(stateDir, 'quic-ticket.key', 48),
    statelessResetKey: await stateKey(stateDir, 'quic-reset.key', 32),
    retryKey: randomBytes(32),
  };
}
