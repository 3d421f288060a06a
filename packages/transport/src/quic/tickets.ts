// Session tickets for 0-RTT resumption, newest per server. A store can be shared by dialers (and
// outlive them) so a process that reconnects to the same pooler resumes instead of handshaking.

/** Keeps the newest TLS session ticket per server key (`host:port/serverName`), bounded in size. */
export class QuicTicketStore {
  private readonly tickets = new Map<string, Uint8Array>();
  constructor(private readonly maxEntries = 1024) {}

  get(server: string): Uint8Array | undefined {
    return this.tickets.get(server);
  }

  set(server: string, ticket: Uint8Array): void {
    // Re-insert so iteration order is recency order; evict the oldest beyond the bound.
    this.tickets.delete(server);
    this.tickets.set(server, ticket);
    if (this.tickets.size > this.maxEntries) {
      const oldest = this.tickets.keys().next();
      if (oldest.done !== true) this.tickets.delete(oldest.value);
    }
  }

  delete(server: string): void {
    this.tickets.delete(server);
  }

  get size(): number {
    return this.tickets.size;
  }
}

/** `identity` names the client certificate presented (see `clientIdentityOf`); '' for none. */
export function ticketKeyOf(host: string, port: number, serverName: string, identity = ''): string {
  return identity === '' ? `${host}:${port}/${serverName}` : `${host}:${port}/${serverName}#${identity}`;
}
