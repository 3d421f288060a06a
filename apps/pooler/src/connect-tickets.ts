// Session tickets of `quicpool connect` kept in a file (mode 600), so an agent started again
// resumes its QUIC connections with 0-RTT. A ticket lets its holder resume a TLS session: the file
// is as private as a key.
import { QuicTicketStore } from '@quicpool/transport';
import { readStateFile, writeStateFile } from './connect-state-file.js';

/** Most tickets kept (one per pooler endpoint and server name is the norm). */
const MAX_TICKETS = 256;

export class FileTicketStore extends QuicTicketStore {
  private readonly copy = new Map<string, string>();

  constructor(private readonly path: string) {
    super(MAX_TICKETS);
    for (const [server, b64] of Object.entries(readStateFile(path) ?? {}).slice(-MAX_TICKETS)) {
      if (typeof b64 === 'string') this.remember(server, b64);
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
    writeStateFile(this.path, Object.fromEntries(this.copy));
  }
}
