import { describe, expect, it } from 'vitest';
import { deriveSaltedPassword, ScramClient } from '../auth/scram.js';
import { ServerSessionState } from '../backend/session-state.js';
import { ClientSession } from './client-session.js';
import type { SessionAction } from './types.js';
import { clientMessages, raw, rawBackend, testContext, types } from '../../test/support/session-helpers.js';

const KEY = { processId: 42, secretKey: Buffer.from([1, 2, 3, 4]) };
const PARAMS = new Map([['server_version', '17.0'], ['client_encoding', 'UTF8']]);

function started(opts: Parameters<typeof testContext>[0] = {}): ClientSession {
  const s = new ClientSession(testContext(opts));
  const a = s.handle({ type: 'startupPacket', packet: { type: 'StartupMessage', protocolVersion: 196608, parameters: { user: 'alice', database: 'db' } } });
  expect(a).toContainEqual({ type: 'authenticated', database: 'db', user: 'alice' });
  const b = s.handle({ type: 'serverParameters', parameters: PARAMS, cancelKey: KEY });
  expect(clientMessages(b).map((m) => m.type)).toEqual(['ParameterStatus', 'ParameterStatus', 'BackendKeyData', 'ReadyForQuery']);
  return s;
}

const noTimers = (actions: SessionAction[]) => actions.filter((a) => a.type !== 'timer');
const find = (actions: SessionAction[], type: SessionAction['type']) => actions.filter((a) => a.type === type);

describe('ClientSession startup', () => {
  it('answers SSLRequest N without a certificate and S with one', () => {
    const s = new ClientSession(testContext({ transport: 'tcp' }));
    expect(s.handle({ type: 'startupPacket', packet: { type: 'SSLRequest' } })).toEqual([{ type: 'sendToClient', bytes: Buffer.from('N') }]);
    const t = new ClientSession(testContext({ transport: 'tcp', tls: true }));
    expect(t.handle({ type: 'startupPacket', packet: { type: 'SSLRequest' } })).toEqual([
      { type: 'sendToClient', bytes: Buffer.from('S') },
      { type: 'startTls' },
    ]);
    const q = new ClientSession(testContext({ transport: 'quic', tls: true }));
    expect(q.handle({ type: 'startupPacket', packet: { type: 'SSLRequest' } })[0]).toEqual({ type: 'sendToClient', bytes: Buffer.from('N') });
  });

  it('answers NegotiateProtocolVersion for 3.5 and _pq_ options, then continues', () => {
    const s = new ClientSession(testContext());
    const a = s.handle({
      type: 'startupPacket',
      packet: { type: 'StartupMessage', protocolVersion: (3 << 16) | 5, parameters: { user: 'alice', '_pq_.foo': 'x' } },
    });
    expect(clientMessages(a)[0]).toEqual({ type: 'NegotiateProtocolVersion', newestProtocolVersion: (3 << 16) | 2, unrecognizedOptions: ['_pq_.foo'] });
    expect(a).toContainEqual({ type: 'authenticated', database: 'alice', user: 'alice' });
  });

  it('routes CancelRequest and closes', () => {
    const s = new ClientSession(testContext());
    expect(noTimers(s.handle({ type: 'startupPacket', packet: { type: 'CancelRequest', processId: 7, secretKey: Buffer.alloc(4, 9) } }))).toEqual([
      { type: 'cancel', processId: 7, secretKey: Buffer.alloc(4, 9) },
      { type: 'close' },
    ]);
  });

  it('rejects unknown startup parameters and refused admission', () => {
    const s = new ClientSession(testContext());
    const a = s.handle({ type: 'startupPacket', packet: { type: 'StartupMessage', protocolVersion: 196608, parameters: { user: 'alice', work_mem: '1MB' } } });
    expect(clientMessages(a)[0]).toMatchObject({ type: 'ErrorResponse', fields: { C: '0A000' } });
    expect(types(a).at(-1)).toBe('close');
    const r = new ClientSession(testContext({ refuse: true }));
    const b = r.handle({ type: 'startupPacket', packet: { type: 'StartupMessage', protocolVersion: 196608, parameters: { user: 'alice' } } });
    expect(clientMessages(b)[0]).toMatchObject({ type: 'ErrorResponse', fields: { C: '53300' } });
  });
});

describe('ClientSession auth', () => {
  const users = { bob: { password: 's3cret' }, carol: { password: 'pw', auth: 'md5' as const } };

  async function scram(password: string): Promise<SessionAction[]> {
    const s = new ClientSession(testContext({ transport: 'tcp', users }));
    const a = s.handle({ type: 'startupPacket', packet: { type: 'StartupMessage', protocolVersion: 196608, parameters: { user: 'bob' } } });
    expect(clientMessages(a)[0]).toEqual({ type: 'AuthenticationSASL', mechanisms: ['SCRAM-SHA-256'] });
    const c = new ScramClient(password);
    const b = s.handle({ type: 'clientMessage', message: raw({ type: 'SASLInitialResponse', mechanism: 'SCRAM-SHA-256', data: c.clientFirst() }) });
    const cont = clientMessages(b)[0];
    if (cont?.type !== 'AuthenticationSASLContinue') throw new Error('expected SASLContinue');
    const salted = await deriveSaltedPassword(c.serverFirst(cont.data));
    return s.handle({ type: 'clientMessage', message: raw({ type: 'SASLResponse', data: c.clientFinal(salted) }) });
  }

  it('SCRAM-SHA-256 succeeds with the right password and fails with 28P01 otherwise', async () => {
    const ok = await scram('s3cret');
    expect(clientMessages(ok).map((m) => m.type)).toEqual(['AuthenticationSASLFinal', 'AuthenticationOk']);
    const bad = await scram('wrong');
    expect(clientMessages(bad)[0]).toMatchObject({ type: 'ErrorResponse', fields: { C: '28P01' } });
    expect(types(bad).at(-1)).toBe('close');
  });

  it('md5 is refused on plain TCP unless allowed', () => {
    const s = new ClientSession(testContext({ transport: 'tcp', users }));
    const a = s.handle({ type: 'startupPacket', packet: { type: 'StartupMessage', protocolVersion: 196608, parameters: { user: 'carol' } } });
    expect(clientMessages(a)[0]).toMatchObject({ type: 'ErrorResponse', fields: { C: '28000' } });
    const t = new ClientSession(testContext({ transport: 'tcp', users, allowInsecure: true }));
    const b = t.handle({ type: 'startupPacket', packet: { type: 'StartupMessage', protocolVersion: 196608, parameters: { user: 'carol' } } });
    expect(clientMessages(b)[0]?.type).toBe('AuthenticationMD5Password');
  });
});

describe('ClientSession transaction pooling', () => {
  it('requests a backend at the first message and releases it at ReadyForQuery I', () => {
    const s = started();
    const q = raw({ type: 'Query', query: 'select 1' });
    expect(types(s.handle({ type: 'clientMessage', message: q }))).toEqual(['timer', 'requestBackend']);
    const a = s.handle({ type: 'backendAttached', backend: { parameters: PARAMS, parametersVersion: 0, sessionState: new ServerSessionState() } });
    expect(noTimers(a)).toEqual([{ type: 'sendToBackend', bytes: q.bytes }]);
    s.handle({ type: 'backendMessage', message: rawBackend({ type: 'CommandComplete', tag: 'SELECT 1' }) });
    const z = s.handle({ type: 'backendMessage', message: rawBackend({ type: 'ReadyForQuery', status: 'I' }) });
    expect(find(z, 'releaseBackend')).toEqual([{ type: 'releaseBackend', facts: { status: 'I', busy: false, dirty: false } }]);
    expect(s.phase).toBe('idle');
  });

  it('keeps the backend pinned in a transaction and until the last Sync is answered', () => {
    const s = started();
    s.handle({ type: 'clientMessage', message: raw({ type: 'Query', query: 'begin' }) });
    s.handle({ type: 'backendAttached', backend: { parameters: PARAMS, parametersVersion: 0, sessionState: new ServerSessionState() } });
    expect(find(s.handle({ type: 'backendMessage', message: rawBackend({ type: 'ReadyForQuery', status: 'T' }) }), 'releaseBackend')).toEqual([]);
    s.handle({ type: 'clientMessage', message: raw({ type: 'Sync' }) });
    s.handle({ type: 'clientMessage', message: raw({ type: 'Sync' }) });
    expect(find(s.handle({ type: 'backendMessage', message: rawBackend({ type: 'ReadyForQuery', status: 'I' }) }), 'releaseBackend')).toEqual([]);
    expect(find(s.handle({ type: 'backendMessage', message: rawBackend({ type: 'ReadyForQuery', status: 'I' }) }), 'releaseBackend')).toHaveLength(1);
  });

  it('never releases between an extended-protocol sequence and its Sync', () => {
    const s = started();
    const ext = [
      raw({ type: 'Parse', name: '', query: 'select 1', parameterTypes: [] }),
      raw({ type: 'Bind', portal: '', statement: '', parameterFormats: [], parameters: [], resultFormats: [] }),
      raw({ type: 'Execute', portal: '', maxRows: 0 }),
    ];
    for (const m of [...ext, raw({ type: 'Sync' }), ...ext]) s.handle({ type: 'clientMessage', message: m });
    s.handle({ type: 'backendAttached', backend: { parameters: PARAMS, parametersVersion: 0, sessionState: new ServerSessionState() } });
    expect(find(s.handle({ type: 'backendMessage', message: rawBackend({ type: 'ReadyForQuery', status: 'I' }) }), 'releaseBackend')).toEqual([]);
    s.handle({ type: 'clientMessage', message: raw({ type: 'Sync' }) });
    expect(find(s.handle({ type: 'backendMessage', message: rawBackend({ type: 'ReadyForQuery', status: 'I' }) }), 'releaseBackend')).toHaveLength(1);
    // Parse/Execute then Flush and the client vanishes: the backend is mid-sequence, so busy.
    s.handle({ type: 'clientMessage', message: ext[0]! });
    s.handle({ type: 'backendAttached', backend: { parameters: PARAMS, parametersVersion: 0, sessionState: new ServerSessionState() } });
    s.handle({ type: 'clientMessage', message: raw({ type: 'Flush' }) });
    expect(find(s.handle({ type: 'clientClosed' }), 'releaseBackend')).toEqual([{ type: 'releaseBackend', facts: { status: 'I', busy: true, dirty: false } }]);
  });

  it('a client vanishing mid-transaction releases the backend with its facts', () => {
    const s = started();
    s.handle({ type: 'clientMessage', message: raw({ type: 'Query', query: 'begin' }) });
    s.handle({ type: 'backendAttached', backend: { parameters: PARAMS, parametersVersion: 0, sessionState: new ServerSessionState() } });
    s.handle({ type: 'backendMessage', message: rawBackend({ type: 'ReadyForQuery', status: 'T' }) });
    s.handle({ type: 'clientMessage', message: raw({ type: 'Query', query: "set x.y = '1'" }) });
    const a = s.handle({ type: 'clientClosed' });
    expect(find(a, 'releaseBackend')).toEqual([{ type: 'releaseBackend', facts: { status: 'T', busy: true, dirty: true } }]);
    expect(types(a).at(-1)).toBe('close');
  });

  it('re-applies tracked parameters with SET and swallows the answer', () => {
    const s = new ClientSession(testContext());
    s.handle({ type: 'startupPacket', packet: { type: 'StartupMessage', protocolVersion: 196608, parameters: { user: 'alice', application_name: 'app' } } });
    const b = s.handle({ type: 'serverParameters', parameters: PARAMS, cancelKey: KEY });
    expect(clientMessages(b)).not.toContainEqual({ type: 'ParameterStatus', name: 'application_name', value: 'app' }); // not a server parameter
    s.handle({ type: 'clientMessage', message: raw({ type: 'Query', query: 'select 1' }) });
    const a = noTimers(s.handle({ type: 'backendAttached', backend: { parameters: PARAMS, parametersVersion: 0, sessionState: new ServerSessionState() } }));
    expect(a).toHaveLength(2);
    expect((a[0] as { bytes: Buffer }).bytes.toString()).toContain(`SELECT pg_catalog.set_config('application_name', $q$app$q$, false);`);
    expect(noTimers(s.handle({ type: 'backendMessage', message: rawBackend({ type: 'ReadyForQuery', status: 'I' }) }))).toEqual([]);
  });

  it('arms the query timer while a request is outstanding and the idle-in-transaction timer after it', () => {
    const s = started();
    s.handle({ type: 'clientMessage', message: raw({ type: 'Query', query: 'begin' }) });
    expect(find(s.handle({ type: 'backendAttached', backend: { parameters: PARAMS, parametersVersion: 0, sessionState: new ServerSessionState() } }), 'timer')).toEqual([{ type: 'timer', timer: 'query', armed: true }]);
    expect(find(s.handle({ type: 'backendMessage', message: rawBackend({ type: 'ReadyForQuery', status: 'T' }) }), 'timer')).toEqual([
      { type: 'timer', timer: 'query', armed: false },
      { type: 'timer', timer: 'idleInTransaction', armed: true },
    ]);
    const t = s.handle({ type: 'timeout', timer: 'idleInTransaction' });
    expect(clientMessages(t)[0]).toMatchObject({ type: 'ErrorResponse', fields: { C: '25P03' } });
    expect(find(t, 'releaseBackend')).toEqual([{ type: 'releaseBackend', facts: { status: 'T', busy: false, dirty: false } }]);
  });

  it('a lost backend gives the client 08006 and closes it', () => {
    const s = started();
    s.handle({ type: 'clientMessage', message: raw({ type: 'Query', query: 'select 1' }) });
    s.handle({ type: 'backendAttached', backend: { parameters: PARAMS, parametersVersion: 0, sessionState: new ServerSessionState() } });
    const a = s.handle({ type: 'backendLost', reason: 'boom' });
    expect(clientMessages(a)[0]).toMatchObject({ type: 'ErrorResponse', fields: { S: 'FATAL', C: '08006' } });
    expect(find(a, 'releaseBackend')).toEqual([]);
  });

  it("after the server's own FATAL the lost backend closes the client without a second error", () => {
    const s = started();
    s.handle({ type: 'clientMessage', message: raw({ type: 'Query', query: 'select pg_sleep(10)' }) });
    s.handle({ type: 'backendAttached', backend: { parameters: PARAMS, parametersVersion: 0, sessionState: new ServerSessionState() } });
    const fatal = s.handle({ type: 'backendMessage', message: rawBackend({ type: 'ErrorResponse', fields: { S: 'FATAL', V: 'FATAL', C: '57P01', M: 'terminating connection due to administrator command' } }) });
    expect(clientMessages(fatal)).toMatchObject([{ type: 'ErrorResponse', fields: { C: '57P01' } }]);
    const a = s.handle({ type: 'backendLost', reason: 'server closed the connection' });
    expect(clientMessages(a)).toEqual([]);
    expect(types(a).at(-1)).toBe('close');
    // An ERROR is not the end: a lost backend after one still gets 08006.
    const t = started();
    t.handle({ type: 'clientMessage', message: raw({ type: 'Query', query: 'select x' }) });
    t.handle({ type: 'backendAttached', backend: { parameters: PARAMS, parametersVersion: 0, sessionState: new ServerSessionState() } });
    t.handle({ type: 'backendMessage', message: rawBackend({ type: 'ErrorResponse', fields: { S: 'ERROR', V: 'ERROR', C: '42703', M: 'column "x" does not exist' } }) });
    expect(clientMessages(t.handle({ type: 'backendLost', reason: 'boom' }))[0]).toMatchObject({ fields: { C: '08006' } });
  });
});
