// A minimal protocol-3 client for fidelity tests: sends typed frontend messages (pipelined as one
// write) and collects the backend's answers, so the same stream can be sent to Postgres directly
// and through the pooler and the answers compared. Over TCP, or any stream (a QUIC session stream).
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { BackendDecoder, encodeFrontend, encodeStartupPacket } from '@quicpool/wire';
import type { BackendMessage, FrontendMessage } from '@quicpool/wire';

export class RawClient {
  private readonly decoder = new BackendDecoder();
  private readonly received: BackendMessage[] = [];
  private wake: (() => void) | null = null;

  private constructor(private readonly socket: Duplex) {
    socket.on('data', (chunk: Buffer) => {
      this.decoder.push(chunk);
      for (let m = this.decoder.next(); m !== undefined; m = this.decoder.next()) this.received.push(m);
      this.wake?.();
    });
  }

  static async connect(port: number, user: string, database: string): Promise<RawClient> {
    const socket = net.connect({ host: '127.0.0.1', port });
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    return RawClient.over(socket, user, database);
  }

  /** A session on an open stream, as a trust user (no password exchange). */
  static async over(socket: Duplex, user: string, database: string): Promise<RawClient> {
    const c = new RawClient(socket);
    socket.write(encodeStartupPacket({ type: 'StartupMessage', protocolVersion: 196608, parameters: { user, database } }));
    await c.until(1);
    return c;
  }

  send(messages: readonly FrontendMessage[]): void {
    this.socket.write(Buffer.concat(messages.map((m) => encodeFrontend(m))));
  }

  /** Waits for `ready` ReadyForQuery messages; returns everything received up to the last one. */
  async until(ready: number): Promise<BackendMessage[]> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      let seen = 0;
      const end = this.received.findIndex((m) => m.type === 'ReadyForQuery' && ++seen === ready);
      if (end >= 0) return this.received.splice(0, end + 1);
      if (Date.now() > deadline) throw new Error(`timed out waiting for ReadyForQuery; got ${this.received.map((m) => m.type).join(',')}`);
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        setTimeout(resolve, 50);
      });
    }
  }

  /** Waits for a message of `type`; returns everything received up to it. */
  async untilMessage(type: BackendMessage['type']): Promise<BackendMessage[]> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const end = this.received.findIndex((m) => m.type === type);
      if (end >= 0) return this.received.splice(0, end + 1);
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${type}; got ${this.received.map((m) => m.type).join(',')}`);
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        setTimeout(resolve, 50);
      });
    }
  }

  close(): void {
    this.socket.end(encodeFrontend({ type: 'Terminate' }));
  }
}

/**
 * Message types, with the SQLSTATE of errors, the columns of row descriptions and the values of
 * rows (so that running another statement shows): what two runs must agree on.
 */
export function summary(messages: readonly BackendMessage[]): string[] {
  return messages.map((m) => {
    switch (m.type) {
      case 'ErrorResponse':
        return `Error:${m.fields['C'] ?? '?'}`;
      case 'RowDescription':
        return `RowDescription:${m.fields.map((f) => f.name).join(',')}`;
      case 'DataRow':
        return `DataRow:${m.values.map((v) => (v === null ? 'NULL' : v.toString())).join(',')}`;
      default:
        return m.type;
    }
  });
}
