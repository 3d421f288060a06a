// Logging in to the real PostgreSQL server: TCP connect, StartupMessage, whatever authentication
// the server asks for (SCRAM-SHA-256, md5, cleartext password, trust), then ParameterStatus and
// BackendKeyData until the first ReadyForQuery. Returns the socket with its decoder, ready to use.
import net from 'node:net';
import { BackendDecoder, encodeFrontend, encodeStartupPacket, errorResponse, PROTOCOL_3_0, SQLSTATE } from '@quicpool/wire';
import type { BackendMessage, NoticeFields } from '@quicpool/wire';
import { md5Response, md5Secret } from '../auth/md5.js';
import { SCRAM_SHA_256, ScramClient } from '../auth/scram.js';
import { SocketInput } from './socket-input.js';

export interface BackendLogin {
  readonly host: string;
  readonly port: number;
  readonly database: string;
  readonly user: string;
  readonly password: string | undefined;
  readonly connectTimeoutMs: number;
}

export interface BackendConnection {
  readonly socket: net.Socket;
  readonly decoder: BackendDecoder;
  readonly parameters: Map<string, string>;
  readonly processId: number;
  readonly secretKey: Buffer;
  /**
   * The socket's bytes (it is read with `onread`: it emits no 'data'): the login feeds them to
   * `decoder` until the Backend takes them over with setConsumer. Absent: read 'data' events.
   */
  readonly input?: SocketInput;
}

/** Login failed: `fields` are the server's ErrorResponse fields when it sent one. */
export class BackendLoginError extends Error {
  override readonly name = 'BackendLoginError';
  constructor(
    message: string,
    readonly fields: NoticeFields | undefined,
  ) {
    super(message);
  }

  /** The ErrorResponse a waiting client gets: the server's own (its SQLSTATE kept), else 08006. */
  toErrorResponse(): Buffer {
    const f = this.fields;
    if (f === undefined) return errorResponse('FATAL', SQLSTATE.SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION, this.message);
    const { S: _s, V: _v, C: code, M: message, ...extra } = f;
    return errorResponse('FATAL', code ?? SQLSTATE.CONNECTION_FAILURE, message ?? this.message, pick(extra, 'DH'));
  }
}

function pick(fields: NoticeFields, codes: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const c of codes) if (fields[c] !== undefined) out[c] = fields[c];
  return out;
}

export function connectBackend(login: BackendLogin): Promise<BackendConnection> {
  return new Promise<BackendConnection>((resolve, reject) => {
    // During the login every chunk is kept (the decoder may hold views of it): not worth a copy.
    const input = new SocketInput((chunk) => {
      input.retain();
      onData(chunk);
    });
    const socket = net.connect({ host: login.host, port: login.port, noDelay: true, onread: input.onread });
    const decoder = new BackendDecoder();
    const parameters = new Map<string, string>();
    let processId = 0;
    let secretKey = Buffer.alloc(0);
    let scram: ScramClient | null = null;
    let busy = false; // an async step (SCRAM's PBKDF2) is running: messages wait in the decoder
    let done = false;

    const timer = setTimeout(() => fail(new BackendLoginError(`server login timed out after ${login.connectTimeoutMs} ms`, undefined)), login.connectTimeoutMs);
    const fail = (e: Error): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      reject(e instanceof BackendLoginError ? e : new BackendLoginError(`server login failed: ${e.message}`, undefined));
    };
    const needPassword = (): string => {
      if (login.password === undefined) throw new BackendLoginError(`server asks for a password for user "${login.user}" and none is configured`, undefined);
      return login.password;
    };

    const onMessage = async (m: BackendMessage): Promise<boolean> => {
      switch (m.type) {
        case 'AuthenticationOk':
        case 'NoticeResponse':
        case 'NegotiateProtocolVersion':
          return false;
        case 'AuthenticationCleartextPassword':
          socket.write(encodeFrontend({ type: 'PasswordMessage', password: needPassword() }));
          return false;
        case 'AuthenticationMD5Password':
          socket.write(encodeFrontend({ type: 'PasswordMessage', password: md5Response(md5Secret(login.user, needPassword()), m.salt) }));
          return false;
        case 'AuthenticationSASL': {
          if (!m.mechanisms.includes(SCRAM_SHA_256)) throw new BackendLoginError(`server offers no supported SASL mechanism (${m.mechanisms.join(', ')})`, undefined);
          scram = new ScramClient(needPassword());
          socket.write(encodeFrontend({ type: 'SASLInitialResponse', mechanism: SCRAM_SHA_256, data: scram.clientFirst() }));
          return false;
        }
        case 'AuthenticationSASLContinue':
          if (scram === null) throw new BackendLoginError('unexpected AuthenticationSASLContinue', undefined);
          socket.write(encodeFrontend({ type: 'SASLResponse', data: await scram.clientFinal(m.data) }));
          return false;
        case 'AuthenticationSASLFinal':
          if (scram === null) throw new BackendLoginError('unexpected AuthenticationSASLFinal', undefined);
          scram.verifyServerFinal(m.data);
          return false;
        case 'ParameterStatus':
          parameters.set(m.name, m.value);
          return false;
        case 'BackendKeyData':
          processId = m.processId;
          secretKey = Buffer.from(m.secretKey);
          return false;
        case 'ErrorResponse':
          throw new BackendLoginError(`server refused login: ${m.fields['M'] ?? 'unknown error'}`, m.fields);
        case 'ReadyForQuery':
          return true;
        default:
          throw new BackendLoginError(`unexpected ${m.type} during server login`, undefined);
      }
    };

    const pump = async (): Promise<void> => {
      if (busy || done) return;
      busy = true;
      try {
        for (let m = decoder.next(); m !== undefined; m = decoder.next()) {
          if (await onMessage(m)) {
            done = true;
            clearTimeout(timer);
            socket.off('error', fail);
            socket.off('close', onClose);
            // Bytes that arrive before the Backend takes the input over wait in the decoder.
            resolve({ socket, decoder, parameters, processId, secretKey, input });
            return;
          }
          if (done) return;
        }
      } catch (e) {
        fail(e instanceof Error ? e : new Error(String(e)));
      } finally {
        busy = false;
      }
    };
    const onData = (chunk: Buffer): void => {
      try {
        decoder.push(chunk);
      } catch (e) {
        fail(e as Error);
        return;
      }
      void pump();
    };
    const onClose = (): void => fail(new BackendLoginError('server closed the connection during login', undefined));

    socket.on('error', fail);
    socket.on('close', onClose);
    socket.once('connect', () => {
      socket.write(
        encodeStartupPacket({
          type: 'StartupMessage',
          protocolVersion: PROTOCOL_3_0,
          parameters: { user: login.user, database: login.database },
        }),
      );
    });
  });
}
