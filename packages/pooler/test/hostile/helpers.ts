// Byte-level clients for the hostile-input and security tests: write whatever bytes a test wants
// on any session stream (a TCP socket or a QUIC stream), collect what the pooler answers, and see
// whether and how the pooler ended the session.
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { BackendDecoder, encodeStartupPacket } from '@quicpool/wire';
import type { BackendMessage } from '@quicpool/wire';
import { pgInfo } from '../support/pooler-helpers.js';

export class RawSession {
  readonly messages: BackendMessage[] = [];
  /** Bytes the decoder could not make sense of (the pooler never sends such, so it stays empty). */
  undecodable = 0;
  closed = false;
  readonly opened = Date.now();
  closedAt = 0;
  /** Single-byte answers to SSLRequest/GSSENCRequest ('S'/'N'), read before the typed messages. */
  readonly sslAnswers: string[] = [];
  private sslAnswersExpected = 0;
  private readonly decoder = new BackendDecoder();
  private waiters: (() => void)[] = [];

  constructor(readonly stream: Duplex) {
    stream.on('data', (chunk: Buffer) => {
      let c = chunk;
      while (this.sslAnswersExpected > 0 && c.length > 0) {
        this.sslAnswersExpected--;
        this.sslAnswers.push(String.fromCharCode(c[0]!));
        c = c.subarray(1);
      }
      try {
        this.decoder.push(c);
        this.messages.push(...this.decoder.drain());
      } catch {
        this.undecodable += c.length;
      }
      this.wake();
    });
    stream.on('error', () => undefined);
    // 'end' (FIN) is enough: the pooler closes its side right after its last message.
    const gone = (): void => {
      if (this.closed) return;
      this.closed = true;
      this.closedAt = Date.now();
      this.wake();
    };
    stream.on('end', gone);
    stream.on('close', gone);
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  /** The next `n` bytes from the pooler are one-byte SSLRequest/GSSENCRequest answers. */
  expectSslAnswers(n = 1): this {
    this.sslAnswersExpected += n;
    return this;
  }

  write(bytes: Buffer | Uint8Array): void {
    if (!this.stream.destroyed && this.stream.writable) this.stream.write(bytes);
  }

  /** Waits until `done` holds or the pooler closed the session; throws after `ms`. */
  async until(done: (m: readonly BackendMessage[]) => boolean, ms = 5000): Promise<readonly BackendMessage[]> {
    const deadline = Date.now() + ms;
    while (!done(this.messages) && !this.closed) {
      if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms; got ${this.messages.map((m) => m.type).join(',') || 'nothing'}`);
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 25);
      });
    }
    return this.messages;
  }

  /** Waits for the pooler to close the session (throws after `ms`: a hang). */
  async closedByPeer(ms = 5000): Promise<readonly BackendMessage[]> {
    return this.until(() => false, ms);
  }

  /** SQLSTATEs of the ErrorResponses received so far. */
  get errorCodes(): string[] {
    return this.messages.flatMap((m) => (m.type === 'ErrorResponse' ? [m.fields.C ?? '?'] : []));
  }

  get ready(): boolean {
    return this.messages.some((m) => m.type === 'ReadyForQuery');
  }

  destroy(): void {
    this.stream.destroy();
  }
}

export function rawTcp(port: number): RawSession {
  const socket = net.connect({ host: '127.0.0.1', port });
  socket.setNoDelay(true);
  return new RawSession(socket);
}

export const PROTOCOL_3_0 = 3 << 16;

/** A StartupMessage (protocol 3.0 unless told) for the fixture's trust user (no password). */
export function trustStartup(extra: Record<string, string> = {}, protocolVersion = PROTOCOL_3_0): Buffer {
  return encodeStartupPacket({ type: 'StartupMessage', protocolVersion, parameters: { user: pgInfo.trustUser, database: pgInfo.database, ...extra } });
}

/** A startup-phase packet with any 32-bit code and body, encoded by hand (the codec refuses non-3.x versions). */
export function rawStartupPacket(code: number, body: Buffer = Buffer.alloc(0), length = 8 + body.length): Buffer {
  const b = Buffer.alloc(8 + body.length);
  b.writeInt32BE(length | 0, 0);
  b.writeUInt32BE(code >>> 0, 4);
  body.copy(b, 8);
  return b;
}

/** A typed message with any type byte, declared length and body. */
export function typedMessage(type: string | number, body: Buffer = Buffer.alloc(0), length = 4 + body.length): Buffer {
  const b = Buffer.alloc(5 + body.length);
  b[0] = typeof type === 'number' ? type : type.charCodeAt(0);
  b.writeInt32BE(length | 0, 1);
  body.copy(b, 5);
  return b;
}

/** Runs `n` tasks with at most `concurrency` at once. */
export async function bounded(n: number, concurrency: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < n; i = next++) await task(i);
  };
  await Promise.all(Array.from({ length: Math.min(n, concurrency) }, worker));
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `check` until it holds (throws after `ms`). */
export async function eventually(check: () => boolean, ms = 5000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what} did not hold within ${ms} ms`);
    await sleep(20);
  }
}
