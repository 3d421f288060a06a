// The driver of a server login: dials the server through the transport (backend/dial.ts), feeds
// the login machine (backend/login.ts) what the server sends and carries out what it answers
// (writes, the SCRAM derivation), bounded by the login timeout of the pooler's clock. Resolves
// with the stream, its decoder and what the server told us, ready to carry client traffic.
import { BackendDecoder } from '@quicpool/wire';
import type { SessionStream } from '@quicpool/transport';
import { deriveSaltedPassword } from '../auth/scram.js';
import type { ScramKeys } from '../auth/scram.js';
import type { Clock } from '../runtime/clock.js';
import { describeServer, dialServer } from './dial.js';
import type { DialedServer, ServerAddress } from './dial.js';
import type { ReadInto } from '@quicpool/transport';
import { BackendLoginError, ServerLogin } from './login.js';
import type { LoginAction } from './login.js';
import { SocketInput } from './socket-input.js';
import type { ServerRole } from './server-role.js';

export { BackendLoginError } from './login.js';

export interface BackendLogin {
  readonly database: string;
  readonly user: string;
  readonly password: string | undefined;
  /** Without a password: SCRAM keys a client's proof revealed (auth_query and scram_secret-only users). */
  readonly scramKeys?: ScramKeys | undefined;
  readonly connectTimeoutMs: number;
  /** The pool needs the server's role (target_session_attrs): asked of servers older than 14. */
  readonly needsRole?: boolean;
}

export interface BackendConnection {
  /** The server this connection reached (one of upstream's hosts). */
  readonly server: ServerAddress;
  readonly stream: SessionStream;
  readonly decoder: BackendDecoder;
  readonly parameters: Map<string, string>;
  readonly processId: number;
  readonly secretKey: Buffer;
  /** Standby or read-only: reported by PostgreSQL 14+, asked of older servers when needsRole. */
  readonly role: ServerRole | undefined;
  /**
   * The stream's bytes when it reads into a reused buffer (TCP, unix socket: it emits no 'data'):
   * the login fed them to `decoder` until the Backend takes the input over with setConsumer.
   * Null for TLS: the stream is paused with 'data' events to come.
   */
  readonly input: SocketInput | null;
}

/** How the connection is opened: the server's address by default; a virtual database opens its own. */
export type OpenServer = (o: { connectTimeoutMs: number; readInto: ReadInto }) => Promise<DialedServer>;

export function connectBackend(login: BackendLogin, server: ServerAddress, clock: Clock, open: OpenServer = (o) => dialServer(server, o)): Promise<BackendConnection> {
  return new Promise<BackendConnection>((resolve, reject) => {
    const machine = new ServerLogin(login);
    const decoder = new BackendDecoder();
    let stream: SessionStream | null = null;
    let deriving = false;
    let settled = false;
    // During the login every chunk is kept (the decoder may hold views of it): not worth a copy.
    const input = new SocketInput((chunk, length) => {
      input.retain();
      onData(chunk, length);
    });
    const fail = (e: unknown): void => {
      if (settled) return;
      settled = true;
      clock.clearTimer(timer);
      stream?.destroy();
      reject(e instanceof BackendLoginError ? e : new BackendLoginError(`server login failed: ${e instanceof Error ? e.message : String(e)}`, undefined, errnoOf(e)));
    };
    const timer = clock.setTimer(() => fail(new BackendLoginError(`server login timed out after ${login.connectTimeoutMs} ms`, undefined, 'ETIMEDOUT')), login.connectTimeoutMs);
    const onClose = (): void => fail(new BackendLoginError(`${describeServer(server)} closed the connection during login`, undefined, 'ECONNRESET'));

    const perform = (actions: readonly LoginAction[]): void => {
      for (const a of actions) {
        switch (a.type) {
          case 'send':
            stream?.write(a.bytes);
            break;
          case 'derive':
            deriving = true;
            deriveSaltedPassword(a.derivation).then(
              (salted) => {
                deriving = false;
                perform(machine.handle({ type: 'derived', salted }));
                pump();
              },
              fail,
            );
            break;
          case 'ready': {
            if (settled || stream === null) return;
            settled = true;
            clock.clearTimer(timer);
            stream.off('error', fail);
            stream.off('close', onClose);
            stream.off('end', onClose);
            stream.off('data', onData);
            if (!readsInto) stream.pause(); // the Backend resumes it once it listens
            // Bytes that arrive before the Backend takes the input over wait in the decoder.
            resolve({ server, stream, decoder, input: readsInto ? input : null, ...a.result });
            return;
          }
          case 'failed':
            fail(a.error);
            return;
          default: {
            const never: never = a;
            throw new Error(`unhandled login action ${JSON.stringify(never)}`);
          }
        }
      }
    };
    const pump = (): void => {
      try {
        for (let m = deriving || settled ? undefined : decoder.next(); m !== undefined; m = deriving || settled ? undefined : decoder.next()) {
          perform(machine.handle({ type: 'message', message: m }));
        }
      } catch (e) {
        fail(e);
      }
    };
    const onData = (chunk: Buffer, length: number = chunk.length): void => {
      try {
        decoder.push(chunk, length);
      } catch (e) {
        fail(e);
        return;
      }
      pump();
    };

    let readsInto = false;
    open({ connectTimeoutMs: login.connectTimeoutMs, readInto: input.readInto }).then((dialed) => {
      if (settled) {
        dialed.stream.destroy();
        return;
      }
      stream = dialed.stream;
      readsInto = dialed.readsInto;
      stream.on('error', fail);
      stream.on('close', onClose);
      stream.on('end', onClose); // half-open streams: the server's end of the stream is the end
      if (!readsInto) stream.on('data', onData);
      perform(machine.start());
    }, fail);
  });
}

/** The errno-style code of a dial or socket error ('ECONNREFUSED', ...), if it has one. */
function errnoOf(e: unknown): string | undefined {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}
