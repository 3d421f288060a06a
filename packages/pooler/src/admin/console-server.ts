// The admin console's "server": a tiny protocol-3 endpoint on a private loopback port that the
// pooler's pool for the admin database logs in to (with a per-process secret). Clients therefore
// reach it through the pooler like any database: the pooler authenticates them and checks that
// they are admin users; this server only turns simple-protocol SHOW/PAUSE/... into result sets.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import { encodeBackend, errorResponse, FrontendDecoder, SQLSTATE } from '@quicpool/wire';
import type { FieldDescription } from '@quicpool/wire';

export type AdminColumnType = 'text' | 'int';

export type AdminResult =
  | {
      readonly kind: 'rows';
      readonly columns: readonly { readonly name: string; readonly type: AdminColumnType }[];
      readonly rows: readonly (readonly (string | number | null)[])[];
      readonly tag: string;
    }
  | { readonly kind: 'command'; readonly tag: string }
  | { readonly kind: 'error'; readonly sqlstate: string; readonly message: string };

export interface AdminCommands {
  /** One statement (no trailing semicolon, trimmed). */
  run(statement: string): Promise<AdminResult>;
}

export interface AdminServer {
  readonly host: string;
  readonly port: number;
  /** The only password this server accepts. */
  readonly password: string;
  close(): Promise<void>;
}

const PARAMETERS: readonly (readonly [string, string])[] = [
  ['server_version', '17.0 (quicpool admin console)'],
  ['server_encoding', 'UTF8'],
  ['client_encoding', 'UTF8'],
  ['DateStyle', 'ISO, MDY'],
  ['integer_datetimes', 'on'],
  ['standard_conforming_strings', 'on'],
  ['TimeZone', 'UTC'],
  ['application_name', ''],
];

const field = (name: string, type: AdminColumnType): FieldDescription => ({
  name,
  tableOid: 0,
  columnAttributeNumber: 0,
  dataTypeOid: type === 'int' ? 20 : 25,
  dataTypeSize: type === 'int' ? 8 : -1,
  typeModifier: -1,
  format: 0,
});

function encodeResult(r: AdminResult): Buffer[] {
  switch (r.kind) {
    case 'rows':
      return [
        encodeBackend({ type: 'RowDescription', fields: r.columns.map((c) => field(c.name, c.type)) }),
        ...r.rows.map((row) => encodeBackend({ type: 'DataRow', values: row.map((v) => (v === null ? null : Buffer.from(String(v)))) })),
        encodeBackend({ type: 'CommandComplete', tag: r.tag }),
      ];
    case 'command':
      return [encodeBackend({ type: 'CommandComplete', tag: r.tag })];
    case 'error':
      return [errorResponse('ERROR', r.sqlstate, r.message)];
    default: {
      const never: never = r;
      throw new Error(`unknown admin result ${JSON.stringify(never)}`);
    }
  }
}

const READY = encodeBackend({ type: 'ReadyForQuery', status: 'I' });

function serve(socket: Socket, secret: Buffer, commands: AdminCommands): void {
  const decoder = new FrontendDecoder({ maxMessageSize: 1024 * 1024 });
  let authenticated = false;
  let skipToSync = false;
  let queue = Promise.resolve();
  socket.setNoDelay(true);
  socket.on('error', () => undefined);
  const fail = (sqlstate: string, message: string): void => {
    socket.end(errorResponse('FATAL', sqlstate, message));
  };
  const handle = async (query: string): Promise<void> => {
    const statement = query.trim().replace(/;\s*$/, '').trim();
    if (statement === '') {
      socket.write(Buffer.concat([encodeBackend({ type: 'EmptyQueryResponse' }), READY]));
      return;
    }
    let result: AdminResult;
    try {
      result = await commands.run(statement);
    } catch (e) {
      result = { kind: 'error', sqlstate: SQLSTATE.INTERNAL_ERROR, message: e instanceof Error ? e.message : String(e) };
    }
    if (!socket.destroyed) socket.write(Buffer.concat([...encodeResult(result), READY]));
  };
  socket.on('data', (chunk: Buffer) => {
    try {
      decoder.push(chunk);
      for (let m = decoder.next(); m !== undefined; m = decoder.next()) {
        switch (m.type) {
          case 'SSLRequest':
          case 'GSSENCRequest':
            socket.write('N');
            break;
          case 'StartupMessage':
            decoder.expectAuthentication('PasswordMessage');
            socket.write(encodeBackend({ type: 'AuthenticationCleartextPassword' }));
            break;
          case 'PasswordMessage': {
            const given = Buffer.from(m.password);
            if (given.length !== secret.length || !timingSafeEqual(given, secret)) return fail(SQLSTATE.INVALID_PASSWORD, 'admin console: wrong secret');
            authenticated = true;
            socket.write(
              Buffer.concat([
                encodeBackend({ type: 'AuthenticationOk' }),
                ...PARAMETERS.map(([name, value]) => encodeBackend({ type: 'ParameterStatus', name, value })),
                encodeBackend({ type: 'BackendKeyData', processId: 1, secretKey: randomBytes(4) }),
                READY,
              ]),
            );
            break;
          }
          case 'Query': {
            if (!authenticated) return fail(SQLSTATE.PROTOCOL_VIOLATION, 'not authenticated');
            const q = m.query;
            queue = queue.then(() => handle(q));
            break;
          }
          case 'Parse':
          case 'Bind':
          case 'Describe':
          case 'Execute':
          case 'Close':
          case 'Flush':
            if (!authenticated) return fail(SQLSTATE.PROTOCOL_VIOLATION, 'not authenticated');
            if (!skipToSync) socket.write(errorResponse('ERROR', SQLSTATE.FEATURE_NOT_SUPPORTED, 'the admin console speaks the simple query protocol only'));
            skipToSync = true;
            break;
          case 'Sync':
            skipToSync = false;
            queue = queue.then(() => void socket.write(READY));
            break;
          case 'Terminate':
            socket.end();
            return;
          default:
            return fail(SQLSTATE.PROTOCOL_VIOLATION, `unexpected ${m.type} on the admin console`);
        }
      }
    } catch (e) {
      fail(SQLSTATE.PROTOCOL_VIOLATION, e instanceof Error ? e.message : String(e));
    }
  });
}

/** Starts the console server on 127.0.0.1 (a free port); point an AdminRoute at it. */
export async function createAdminServer(commands: AdminCommands): Promise<AdminServer> {
  const password = randomBytes(24).toString('base64url');
  const secret = Buffer.from(password);
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    serve(socket, secret, commands);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('admin console: no TCP address');
  return {
    host: '127.0.0.1',
    port: address.port,
    password,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
