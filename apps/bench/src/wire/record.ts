/**
 * Records the backend byte stream of the benchmark query from a real PostgreSQL,
 * speaking only through @quicpool/wire over a plain TCP socket (trust, cleartext
 * or SCRAM-SHA-256 authentication). Only the query responses are kept, exactly as
 * the server sent them; the result is gzipped for the repository.
 */
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { gzipSync } from 'node:zlib';
import {
  BackendDecoder,
  decodeBackendMessage,
  encodeFrontend,
  readyForQueryStatus,
  scramClientFinal,
  scramClientFirst,
  verifyScramServerFinal,
} from '@quicpool/wire';
import type { BackendMessage, FrontendMessage } from '@quicpool/wire';

export const BENCH_QUERY = 'SELECT trunc(random() * 100) FROM generate_series(1, 10)';

class Session {
  private readonly decoder = new BackendDecoder();
  private readonly frames: Buffer[] = [];
  private wake: (() => void) | null = null;
  private failure: Error | null = null;

  constructor(private readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.decoder.push(chunk);
      for (let m = this.decoder.nextRaw(); m !== undefined; m = this.decoder.nextRaw()) this.frames.push(Buffer.from(m.bytes));
      this.wake?.();
    });
    socket.on('error', (e) => this.stop(e));
    socket.on('close', () => this.stop(new Error('server closed the connection')));
  }

  private stop(e: Error): void {
    this.failure ??= e;
    this.wake?.();
  }

  send(m: FrontendMessage): void {
    this.socket.write(encodeFrontend(m));
  }

  async frame(): Promise<Buffer> {
    for (;;) {
      const f = this.frames.shift();
      if (f !== undefined) return f;
      if (this.failure !== null) throw this.failure;
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = null;
    }
  }

  async message(): Promise<BackendMessage> {
    const m = decodeBackendMessage(await this.frame());
    if (m.type === 'ErrorResponse') throw new Error(`server error ${m.fields.C}: ${m.fields.M}`);
    return m;
  }

  close(): void {
    this.socket.end(encodeFrontend({ type: 'Terminate' }));
  }
}

async function login(url: URL): Promise<Session> {
  const socket = await new Promise<Socket>((resolve, reject) => {
    const s = connect({ host: url.hostname, port: Number(url.port || 5432), noDelay: true });
    s.once('connect', () => resolve(s));
    s.once('error', reject);
  });
  const session = new Session(socket);
  const user = decodeURIComponent(url.username);
  const password = decodeURIComponent(url.password);
  session.send({
    type: 'StartupMessage',
    protocolVersion: 196608,
    parameters: { user, database: url.pathname.slice(1) || user },
  });
  for (;;) {
    const m = await session.message();
    switch (m.type) {
      case 'AuthenticationOk':
      case 'ParameterStatus':
      case 'BackendKeyData':
      case 'NoticeResponse':
        break;
      case 'AuthenticationCleartextPassword':
        session.send({ type: 'PasswordMessage', password });
        break;
      case 'AuthenticationSASL': {
        const first = scramClientFirst();
        session.send({ type: 'SASLInitialResponse', mechanism: 'SCRAM-SHA-256', data: Buffer.from(first.message) });
        const cont = await session.message();
        if (cont.type !== 'AuthenticationSASLContinue') throw new Error(`unexpected ${cont.type}`);
        const final = scramClientFinal(first, cont.data.toString(), password);
        session.send({ type: 'SASLResponse', data: Buffer.from(final.message) });
        const fin = await session.message();
        if (fin.type !== 'AuthenticationSASLFinal') throw new Error(`unexpected ${fin.type}`);
        verifyScramServerFinal(fin.data.toString(), final);
        break;
      }
      case 'ReadyForQuery':
        return session;
      default:
        throw new Error(`unsupported message during startup: ${m.type}`);
    }
  }
}

/** Run the benchmark query `queries` times (one at a time) and return the gzipped response bytes. */
export async function recordSelectTrunc(connectionUrl: string, queries: number): Promise<Buffer> {
  const session = await login(new URL(connectionUrl));
  const out: Buffer[] = [];
  for (let q = 0; q < queries; q++) {
    session.send({ type: 'Query', query: BENCH_QUERY });
    for (;;) {
      const f = await session.frame();
      if (f[0] === 0x45) throw new Error(`server error: ${JSON.stringify(decodeBackendMessage(f))}`);
      out.push(f);
      if (readyForQueryStatus(f) !== undefined) break;
    }
  }
  session.close();
  return gzipSync(Buffer.concat(out), { level: 9 });
}
