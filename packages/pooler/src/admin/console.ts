// The admin console's "server": a tiny protocol-3 endpoint served in process. The pooler's pool
// for the admin database gets an in-memory stream pair per backend (core: virtual databases) and
// this side answers it; there is no port and no secret, because nothing outside the process can
// reach the other end. Clients reach the console through the pooler like any database: the pooler
// authenticates them and checks that they are admin users; this server only turns
// simple-protocol SHOW/PAUSE/... into result sets. Settings a session brings (application_name,
// options=-c..., SET) are answered and remembered, never refused: see settings.ts.
import { randomBytes } from 'node:crypto';
import { encodeBackend, errorResponse, FrontendDecoder, SQLSTATE } from '@quicpool/wire';
import type { FieldDescription, SqlState } from '@quicpool/wire';
import type { SessionStream } from '@quicpool/transport';
import type { VirtualDatabase } from '../core/pooler-core.js';
import { parseSettings } from './settings.js';
import type { SettingStatement } from './settings.js';

export type AdminColumnType = 'text' | 'int';

export type AdminResult =
  | {
      readonly kind: 'rows';
      readonly columns: readonly { readonly name: string; readonly type: AdminColumnType }[];
      readonly rows: readonly (readonly (string | number | null)[])[];
      readonly tag: string;
    }
  | { readonly kind: 'command'; readonly tag: string }
  | { readonly kind: 'error'; readonly sqlstate: SqlState; readonly message: string };

export interface AdminCommands {
  /** One statement (no trailing semicolon, trimmed). */
  run(statement: string): Promise<AdminResult>;
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

/** A reported parameter's name as the console reports it, by its lower-case form. */
const REPORTED = new Map(PARAMETERS.map(([name]) => [name.toLowerCase(), name]));
const DEFAULTS: ReadonlyMap<string, string> = new Map(PARAMETERS);

/**
 * The answer to settings statements (see settings.ts): each one's result, as a server gives it,
 * and `reported` changed where the statement names a reported parameter. Nothing else changes.
 */
function answerSettings(statements: readonly SettingStatement[], reported: Map<string, string>): AdminResult[] {
  const put = (name: string, value: string | null): void => {
    const canonical = REPORTED.get(name.toLowerCase());
    if (canonical !== undefined) reported.set(canonical, value ?? DEFAULTS.get(canonical) ?? '');
  };
  return statements.map((st): AdminResult => {
    switch (st.kind) {
      case 'set_config':
        for (const [name, value] of st.values) put(name, value);
        return { kind: 'rows', columns: st.values.map(() => ({ name: 'set_config', type: 'text' })), rows: [st.values.map(([, value]) => value)], tag: 'SELECT 1' };
      case 'set':
        put(st.name, st.value);
        return { kind: 'command', tag: 'SET' };
      case 'reset':
        if (st.name === null) for (const name of REPORTED.values()) put(name, null);
        else put(st.name, null);
        return { kind: 'command', tag: 'RESET' };
      default: {
        const never: never = st;
        throw new Error(`unknown settings statement ${JSON.stringify(never)}`);
      }
    }
  });
}

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

/** Answers one connection of the admin pool on `stream` (after the pool's StartupMessage). */
function serve(stream: SessionStream, commands: AdminCommands): void {
  const decoder = new FrontendDecoder({ maxMessageSize: 1024 * 1024 });
  let started = false;
  let skipToSync = false;
  let queue = Promise.resolve();
  /** The reported parameters' values on this connection (ParameterStatus when one changes). */
  const reported = new Map(PARAMETERS);
  stream.on('error', () => undefined);
  const fail = (sqlstate: SqlState, message: string): void => {
    stream.end(errorResponse('FATAL', sqlstate, message));
  };
  const handle = async (query: string): Promise<void> => {
    const settings = parseSettings(query);
    if (settings !== null) {
      const before = new Map(reported);
      const results = answerSettings(settings, reported);
      const changed = [...reported].filter(([name, value]) => before.get(name) !== value);
      stream.write(Buffer.concat([...results.flatMap(encodeResult), ...changed.map(([name, value]) => encodeBackend({ type: 'ParameterStatus', name, value })), READY]));
      return;
    }
    const statement = query.trim().replace(/;\s*$/, '').trim();
    if (statement === '') {
      stream.write(Buffer.concat([encodeBackend({ type: 'EmptyQueryResponse' }), READY]));
      return;
    }
    let result: AdminResult;
    try {
      result = await commands.run(statement);
    } catch (e) {
      result = { kind: 'error', sqlstate: SQLSTATE.INTERNAL_ERROR, message: e instanceof Error ? e.message : String(e) };
    }
    if (!stream.destroyed) stream.write(Buffer.concat([...encodeResult(result), READY]));
  };
  stream.on('data', (chunk: Buffer) => {
    try {
      decoder.push(chunk);
      for (let m = decoder.next(); m !== undefined; m = decoder.next()) {
        switch (m.type) {
          case 'StartupMessage':
            // Only the pooler's own pool reaches this stream: it is authenticated by construction.
            started = true;
            stream.write(
              Buffer.concat([
                encodeBackend({ type: 'AuthenticationOk' }),
                ...PARAMETERS.map(([name, value]) => encodeBackend({ type: 'ParameterStatus', name, value })),
                encodeBackend({ type: 'BackendKeyData', processId: 1, secretKey: randomBytes(4) }),
                READY,
              ]),
            );
            break;
          case 'Query': {
            if (!started) return fail(SQLSTATE.PROTOCOL_VIOLATION, 'no StartupMessage');
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
            if (!started) return fail(SQLSTATE.PROTOCOL_VIOLATION, 'no StartupMessage');
            if (!skipToSync) stream.write(errorResponse('ERROR', SQLSTATE.FEATURE_NOT_SUPPORTED, 'the admin console speaks the simple query protocol only'));
            skipToSync = true;
            break;
          case 'Sync':
            skipToSync = false;
            queue = queue.then(() => void stream.write(READY));
            break;
          case 'Terminate':
            stream.end();
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

/** The admin console as a virtual database of the pooler, for the users in `users`. */
export function adminDatabase(commands: AdminCommands, users: () => ReadonlySet<string>): VirtualDatabase {
  return {
    get users() {
      return users();
    },
    serve: (stream) => serve(stream, commands),
  };
}
