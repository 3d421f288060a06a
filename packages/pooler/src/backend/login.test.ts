// The server login machine without sockets: what it sends for each authentication the server
// asks for (checked by the server-side code that verifies it), what it keeps, how it fails.
import { pbkdf2Sync } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeBackendMessage, decodeFrontendMessage, decodeStartupPacket } from '@quicpool/wire';
import type { BackendMessage } from '@quicpool/wire';
import { md5Response, md5Secret } from '../auth/md5.js';
import { deriveSaltedPassword, ScramServer, scramSecretFromPassword } from '../auth/scram.js';
import { BackendLoginError, ServerLogin } from './login.js';
import type { LoginAction } from './login.js';

const LOGIN = { database: 'app', user: 'alice', password: 's3cret' };
const KEY: BackendMessage = { type: 'BackendKeyData', processId: 4242, secretKey: Buffer.from([1, 2, 3, 4]) };
const READY: BackendMessage = { type: 'ReadyForQuery', status: 'I' };
const OK: BackendMessage = { type: 'AuthenticationOk' };

function sent(actions: readonly LoginAction[]): Buffer[] {
  return actions.flatMap((a) => (a.type === 'send' ? [a.bytes] : []));
}

function feed(login: ServerLogin, messages: readonly BackendMessage[]): LoginAction[] {
  return messages.flatMap((message) => login.handle({ type: 'message', message }));
}

function failure(actions: readonly LoginAction[]): BackendLoginError {
  const f = actions.find((a) => a.type === 'failed');
  if (f?.type !== 'failed') throw new Error(`expected a failure, got ${JSON.stringify(actions.map((a) => a.type))}`);
  return f.error;
}

describe('ServerLogin', () => {
  it('sends a protocol 3.0 StartupMessage with user and database, once', () => {
    const login = new ServerLogin(LOGIN);
    const [bytes] = sent(login.start());
    expect(decodeStartupPacket(bytes!)).toEqual({ type: 'StartupMessage', protocolVersion: 196608, parameters: { user: 'alice', database: 'app' } });
    expect(login.start()).toEqual([]);
  });

  it('knows the role a PostgreSQL 14+ server reports; asks an older one when the pool needs it', () => {
    const reported = new ServerLogin({ ...LOGIN, needsRole: true });
    reported.start();
    const ready = feed(reported, [OK, { type: 'ParameterStatus', name: 'in_hot_standby', value: 'on' }, { type: 'ParameterStatus', name: 'default_transaction_read_only', value: 'off' }, KEY, READY]);
    expect(ready.find((a) => a.type === 'ready')).toMatchObject({ result: { role: { standby: true, readOnly: true } } });

    const old = new ServerLogin({ ...LOGIN, needsRole: true });
    old.start();
    const asked = feed(old, [OK, { type: 'ParameterStatus', name: 'server_version', value: '13.4' }, KEY, READY]);
    expect(sent(asked).map((b) => decodeFrontendMessage(b))).toEqual([
      { type: 'Query', query: "SELECT pg_catalog.pg_is_in_recovery()::pg_catalog.text, pg_catalog.current_setting('transaction_read_only')" },
    ]);
    const answered = feed(old, [
      { type: 'RowDescription', fields: [] },
      { type: 'DataRow', values: [Buffer.from('false'), Buffer.from('on')] },
      { type: 'CommandComplete', tag: 'SELECT 1' },
      READY,
    ]);
    expect(answered.find((a) => a.type === 'ready')).toMatchObject({ result: { role: { standby: false, readOnly: true } } });

    // A pool that takes any server asks nothing.
    const any = new ServerLogin(LOGIN);
    any.start();
    expect(feed(any, [OK, KEY, READY]).map((a) => a.type)).toEqual(['ready']);
  });

  it('trust: keeps ParameterStatus and BackendKeyData and is ready at ReadyForQuery', () => {
    const login = new ServerLogin(LOGIN);
    login.start();
    const actions = feed(login, [
      OK,
      { type: 'ParameterStatus', name: 'server_version', value: '17.6' },
      { type: 'NoticeResponse', fields: { S: 'NOTICE', C: '00000', M: 'hello' } },
      { type: 'ParameterStatus', name: 'TimeZone', value: 'UTC' },
      KEY,
      READY,
    ]);
    expect(actions).toEqual([
      { type: 'ready', result: { parameters: new Map([['server_version', '17.6'], ['TimeZone', 'UTC']]), processId: 4242, secretKey: Buffer.from([1, 2, 3, 4]) } },
    ]);
    expect(login.done).toBe(true);
    expect(feed(login, [READY])).toEqual([]); // done: nothing more
  });

  it('cleartext and md5: the password message the server checks', () => {
    const clear = new ServerLogin(LOGIN);
    clear.start();
    const [p] = sent(feed(clear, [{ type: 'AuthenticationCleartextPassword' }]));
    expect(decodeFrontendMessage(p!, 'PasswordMessage')).toEqual({ type: 'PasswordMessage', password: 's3cret' });

    const md5 = new ServerLogin(LOGIN);
    md5.start();
    const salt = Buffer.from([9, 8, 7, 6]);
    const [m] = sent(feed(md5, [{ type: 'AuthenticationMD5Password', salt }]));
    expect(decodeFrontendMessage(m!, 'PasswordMessage')).toEqual({ type: 'PasswordMessage', password: md5Response(md5Secret('alice', 's3cret'), salt) });
  });

  it('SCRAM-SHA-256: a full exchange that the server side verifies, with the derivation done outside', async () => {
    const server = new ScramServer(scramSecretFromPassword('s3cret', 4096));
    const login = new ServerLogin(LOGIN);
    login.start();
    const [initial] = sent(feed(login, [{ type: 'AuthenticationSASL', mechanisms: ['SCRAM-SHA-256-PLUS', 'SCRAM-SHA-256'] }]));
    const first = decodeFrontendMessage(initial!, 'SASLInitialResponse');
    if (first.type !== 'SASLInitialResponse') throw new Error('expected SASLInitialResponse');
    expect(first.mechanism).toBe('SCRAM-SHA-256');
    const cont = server.clientFirst(first.mechanism, first.data);
    if (cont.kind !== 'continue') throw new Error(cont.kind);
    const derive = feed(login, [{ type: 'AuthenticationSASLContinue', data: Buffer.from(cont.serverFirst) }]);
    expect(derive.map((a) => a.type)).toEqual(['derive']);
    const d = derive[0];
    if (d?.type !== 'derive') throw new Error('expected derive');
    const [response] = sent(login.handle({ type: 'derived', salted: await deriveSaltedPassword(d.derivation) }));
    const final = decodeFrontendMessage(response!, 'SASLResponse');
    if (final.type !== 'SASLResponse') throw new Error('expected SASLResponse');
    const verdict = server.clientFinal(final.data);
    if (verdict.kind !== 'final') throw new Error(`server refused the proof: ${JSON.stringify(verdict)}`);
    const done = feed(login, [{ type: 'AuthenticationSASLFinal', data: Buffer.from(verdict.serverFinal) }, OK, KEY, READY]);
    expect(done.map((a) => a.type)).toEqual(['ready']);
  });

  it("SCRAM-SHA-256 with a client's keys instead of a password (auth_query): nothing to derive, the server accepts the proof", () => {
    const secret = scramSecretFromPassword('s3cret', 4096);
    // The ClientKey a client's proof revealed to the pooler (a password login plays the client).
    const clientKey = scramClientKeyOf(new ScramServer(secret), new ServerLogin(LOGIN));
    const login = new ServerLogin({ ...LOGIN, password: undefined, scramKeys: { clientKey, serverKey: secret.serverKey } });
    login.start();
    const server = new ScramServer(secret);
    const [initial] = sent(feed(login, [{ type: 'AuthenticationSASL', mechanisms: ['SCRAM-SHA-256'] }]));
    const first = decodeFrontendMessage(initial!, 'SASLInitialResponse');
    if (first.type !== 'SASLInitialResponse') throw new Error('expected SASLInitialResponse');
    const cont = server.clientFirst(first.mechanism, first.data);
    if (cont.kind !== 'continue') throw new Error(cont.kind);
    const answer = feed(login, [{ type: 'AuthenticationSASLContinue', data: Buffer.from(cont.serverFirst) }]);
    expect(answer.map((a) => a.type)).toEqual(['send']); // no 'derive'
    const final = decodeFrontendMessage(sent(answer)[0]!, 'SASLResponse');
    if (final.type !== 'SASLResponse') throw new Error('expected SASLResponse');
    const verdict = server.clientFinal(final.data);
    if (verdict.kind !== 'final') throw new Error(`server refused the proof: ${JSON.stringify(verdict)}`);
    expect(feed(login, [{ type: 'AuthenticationSASLFinal', data: Buffer.from(verdict.serverFinal) }, OK, KEY, READY]).map((a) => a.type)).toEqual(['ready']);
  });

  it('SCRAM: a server signature that does not match fails the login (a server that does not know the password)', async () => {
    const login = new ServerLogin(LOGIN);
    const impostor = new ScramServer(scramSecretFromPassword('other', 4096));
    login.start();
    const [initial] = sent(feed(login, [{ type: 'AuthenticationSASL', mechanisms: ['SCRAM-SHA-256'] }]));
    const first = decodeFrontendMessage(initial!, 'SASLInitialResponse');
    if (first.type !== 'SASLInitialResponse') throw new Error('expected SASLInitialResponse');
    const cont = impostor.clientFirst(first.mechanism, first.data);
    if (cont.kind !== 'continue') throw new Error(cont.kind);
    const [d] = feed(login, [{ type: 'AuthenticationSASLContinue', data: Buffer.from(cont.serverFirst) }]);
    if (d?.type !== 'derive') throw new Error('expected derive');
    login.handle({ type: 'derived', salted: await deriveSaltedPassword(d.derivation) });
    const e = failure(feed(login, [{ type: 'AuthenticationSASLFinal', data: Buffer.from('v=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=') }]));
    expect(e.message).toMatch(/signature|server/i);
    expect(login.done).toBe(true);
  });

  it('fails clearly: no password configured, no SCRAM offered, out-of-order and unknown messages', () => {
    const started = (password: string | undefined = LOGIN.password): ServerLogin => {
      const l = new ServerLogin({ ...LOGIN, password });
      l.start();
      return l;
    };
    const noPassword = new ServerLogin({ ...LOGIN, password: undefined });
    noPassword.start();
    expect(failure(feed(noPassword, [{ type: 'AuthenticationCleartextPassword' }])).message).toBe('pooler could not log in to the server as "alice": the server asks for a password and the pooler has none for this user');
    expect(failure(feed(started(), [{ type: 'ErrorResponse', fields: { S: 'FATAL', C: '28P01', M: 'password authentication failed for user "alice"' } }])).toEncodedError()).toMatchObject({
      sqlstate: '08004',
      message: 'pooler could not log in to the server as "alice": password authentication failed for user "alice"',
    });
    expect(failure(feed(started(), [{ type: 'AuthenticationSASL', mechanisms: ['OAUTHBEARER'] }])).message).toContain('OAUTHBEARER');
    expect(failure(feed(started(), [READY])).message).toBe('ReadyForQuery before AuthenticationOk');
    expect(failure(feed(started(), [{ type: 'AuthenticationSASLContinue', data: Buffer.from('r=x') }])).message).toBe('unexpected AuthenticationSASLContinue');
    expect(failure(feed(started(), [OK, { type: 'CommandComplete', tag: 'SELECT 1' }])).message).toBe('unexpected CommandComplete during server login');
    // A message other than an error or notice while SCRAM's proof is being derived.
    const l = started();
    const [initial] = sent(feed(l, [{ type: 'AuthenticationSASL', mechanisms: ['SCRAM-SHA-256'] }]));
    const first = decodeFrontendMessage(initial!, 'SASLInitialResponse');
    if (first.type !== 'SASLInitialResponse' || first.data === null) throw new Error('expected SASLInitialResponse');
    const nonce = /r=([^,]+)/.exec(first.data.toString())?.[1] ?? '';
    feed(l, [{ type: 'AuthenticationSASLContinue', data: Buffer.from(`r=${nonce}server,s=${Buffer.from('salt').toString('base64')},i=4096`) }]);
    expect(failure(feed(l, [OK])).message).toBe('unexpected AuthenticationOk while answering SCRAM');
  });

  it("keeps the server's ErrorResponse: its SQLSTATE, message, detail and hint reach the client", () => {
    const login = new ServerLogin(LOGIN);
    login.start();
    const e = failure(feed(login, [{ type: 'ErrorResponse', fields: { S: 'FATAL', V: 'FATAL', C: '3D000', M: 'database "app" does not exist', D: 'd', H: 'h', F: 'postinit.c' } }]));
    expect(e.fields?.['C']).toBe('3D000');
    const encoded = e.toEncodedError();
    expect(encoded).toMatchObject({ sqlstate: '3D000', message: 'database "app" does not exist' });
    // Severity, SQLSTATE, message, detail, hint; not the server's source file and line.
    expect(decodeBackendMessage(encoded.bytes)).toEqual({ type: 'ErrorResponse', fields: { S: 'FATAL', V: 'FATAL', C: '3D000', M: 'database "app" does not exist', D: 'd', H: 'h' } });
    // Without an ErrorResponse (the connection broke): 08001 with our message.
    expect(new BackendLoginError('connect to 127.0.0.1:1 failed', undefined).toEncodedError()).toMatchObject({ sqlstate: '08001', message: 'connect to 127.0.0.1:1 failed' });
  });

  it('any interleaving of ParameterStatus and notices before ReadyForQuery keeps the last value of each parameter', () => {
    const param = fc.record({ name: fc.constantFrom('a', 'b', 'TimeZone', 'server_version'), value: fc.string({ maxLength: 8 }) });
    const item = fc.oneof(param.map((p): BackendMessage => ({ type: 'ParameterStatus', ...p })), fc.constant<BackendMessage>({ type: 'NoticeResponse', fields: { S: 'NOTICE', M: 'n' } }));
    fc.assert(
      fc.property(fc.array(item, { maxLength: 30 }), (items) => {
        const login = new ServerLogin(LOGIN);
        login.start();
        const [ready] = feed(login, [OK, ...items, KEY, READY]);
        const expected = new Map<string, string>();
        for (const m of items) if (m.type === 'ParameterStatus') expected.set(m.name, m.value);
        expect(ready).toEqual({ type: 'ready', result: { parameters: expected, processId: 4242, secretKey: Buffer.from([1, 2, 3, 4]) } });
      }),
    );
  });
});

/** The ClientKey `server` learns from `login`'s proof (a password login, derived synchronously here). */
function scramClientKeyOf(server: ScramServer, login: ServerLogin): Buffer {
  login.start();
  const [initial] = sent(feed(login, [{ type: 'AuthenticationSASL', mechanisms: ['SCRAM-SHA-256'] }]));
  const first = decodeFrontendMessage(initial!, 'SASLInitialResponse');
  if (first.type !== 'SASLInitialResponse') throw new Error('expected SASLInitialResponse');
  const cont = server.clientFirst(first.mechanism, first.data);
  if (cont.kind !== 'continue') throw new Error(cont.kind);
  const [d] = feed(login, [{ type: 'AuthenticationSASLContinue', data: Buffer.from(cont.serverFirst) }]);
  if (d?.type !== 'derive') throw new Error('expected derive');
  const salted = pbkdf2Sync(d.derivation.password, d.derivation.salt, d.derivation.iterations, 32, 'sha256');
  const final = decodeFrontendMessage(sent(login.handle({ type: 'derived', salted }))[0]!, 'SASLResponse');
  if (final.type !== 'SASLResponse') throw new Error('expected SASLResponse');
  const verdict = server.clientFinal(final.data);
  if (verdict.kind !== 'final') throw new Error(verdict.kind);
  return verdict.clientKey;
}
