// Session tickets of `quicpool connect` kept in a file (mode 600), so an agent started again
// resumes its QUIC connections with 0-RTT. A ticket lets its holder resume a TLS session: the file
// is as private as a key.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { QuicTicketStore } from '@quicpool/transport';

/** Most tickets kept (one per pooler endpoint and server name is the norm). */
const MAX_TICKETS = 256;
/** A larger file is not ours: ignored. */
const MAX_FILE_BYTES = 1 << 20;

export class FileTicketStore extends QuicTicketStore {
  private readonly copy = new Map<string, string>();

  constructor(private readonly path: string) {
    super(MAX_TICKETS);
    let parsed: unknown = null;
    try {
      const text = readFileSync(path, 'utf8');
      if (text.length <= MAX_FILE_BYTES) parsed = JSON.parse(text);
    } catch {
      parsed = null; // none yet, or unreadable: start empty
    }
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
      for (const [server, b64] of Object.entries(parsed as Record<string, unknown>).slice(-MAX_TICKETS)) {
        if (typeof b64 === 'string') this.remember(server, b64);
      }
    }
  }

  override set(server: string, ticket: Uint8Array): void {
    super.set(server, ticket);
    this.copy.delete(server);
    this.copy.set(server, Buffer.from(ticket).toString('base64'));
    while (this.copy.size > MAX_TICKETS) this.copy.delete(this.copy.keys().next().value as string);
    this.save();
  }

  override delete(server: string): void {
    super.delete(server);
    if (this.copy.delete(server)) this.save();
  }

  private remember(server: string, b64: string): void {
    super.set(server, Buffer.from(b64, 'base64'));
    this.copy.set(server, b64);
  }

  private save(): void {
    try {
      mkdirSync(dirname(this.path), { recursive: true, mode: 0o700 });
      const tmp = `${this.path}.${process.pid}.tmp`;
      writeFileSync(tmp, JSON.stringify(Object.fromEntries(this.copy)), { mode: 0o600 });
      renameSync(tmp, this.path);
    } catch {
      // A ticket not saved costs the next start its 0-RTT, nothing else.
    }
  }
}
