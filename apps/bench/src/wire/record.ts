// Records the workload's backend byte stream from a real PostgreSQL through @quicpool/wire over a plain TCP socket (trust,
// cleartext or SCRAM-SHA-256 login): only the query responses, exactly as sent, gzipped for the repository.
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
import { WORKLOAD_SQL } from '../load/variant.js';

/** Every backend message's bytes, as they arrive; a socket error or close ends it with an error. */
async function* backendFrames(socket: Socket): AsyncGenerator<Buffer, never> {
  const decoder = new BackendDecoder();
  for await (const chunk of socket) {
    decoder.push(chunk as Buffer);
    for (let m = decoder.nextRaw(); m !== undefined; m = decoder.nextRaw()) yield Buffer.from(m.bytes);
  }
  throw new Error('server closed the connection');
}

const send = (socket: Socket, m: FrontendMessage): boolean => socket.write(encodeFrontend(m));

/** Connects and logs in; resolves at the first ReadyForQuery with the socket and its frames. */
async function login(url: URL): Promise<{ socket: Socket; frames: AsyncGenerator<Buffer, never> }> {
  const socket = await new Promise<Socket>((resolve, reject) => {
    const s = connect({ host: url.hostname, port: Number(url.port || 5432), noDelay: true });
    s.once('connect', () => resolve(s));
    s.once('error', reject);
  });
  const frames = backendFrames(socket);
  const message = async (): Promise<BackendMessage> => {
    const m = decodeBackendMessage((await frames.next()).value);
    if (m.type === 'ErrorResponse') throw new Error(`server error ${m.fields.C}: ${m.fields.M}`);
    return m;
  };
  const user = decodeURIComponent(url.username);
  const password = decodeURIComponent(url.password);
  send(socket, {
    type: 'StartupMessage',
    protocolVersion: 196608,
    parameters: { user, database: url.pathname.slice(1) || user },
  });
  for (;;) {
    const m = await message();
    switch (m.type) {
      case 'AuthenticationOk':
      case 'ParameterStatus':
      case 'BackendKeyData':
      case 'NoticeResponse':
        break;
      case 'AuthenticationCleartextPassword':
        send(socket, { type: 'PasswordMessage', password });
        break;
      case 'AuthenticationSASL': {
        const first = scramClientFirst();
        send(socket, { type: 'SASLInitialResponse', mechanism: 'SCRAM-SHA-256', data: Buffer.from(first.message) });
        const cont = await message();
        if (cont.type !== 'AuthenticationSASLContinue') throw new Error(`unexpected ${cont.type}`);
        const final = scramClientFinal(first, cont.data.toString(), password);
        send(socket, { type: 'SASLResponse', data: Buffer.from(final.message) });
        const fin = await message();
        if (fin.type !== 'AuthenticationSASLFinal') throw new Error(`unexpected ${fin.type}`);
        verifyScramServerFinal(fin.data.toString(), final);
        break;
      }
      case 'ReadyForQuery':
        return { socket, frames };
      default:
        throw new Error(`unsupported message during startup: ${m.type}`);
    }
  }
}

/** Run the benchmark query `queries` times (one at a time) and return the gzipped response bytes. */
export async function recordSelectTrunc(connectionUrl: string, queries: number): Promise<Buffer> {
  const { socket, frames } = await login(new URL(connectionUrl));
  const out: Buffer[] = [];
  for (let q = 0; q < queries; q++) {
    send(socket, { type: 'Query', query: WORKLOAD_SQL });
    for (;;) {
      const f = (await frames.next()).value;
      if (f[0] === 0x45) throw new Error(`server error: ${JSON.stringify(decodeBackendMessage(f))}`);
      out.push(f);
      if (readyForQueryStatus(f) !== undefined) break;
    }
  }
  socket.end(encodeFrontend({ type: 'Terminate' }));
  return gzipSync(Buffer.concat(out), { level: 9 });
}
