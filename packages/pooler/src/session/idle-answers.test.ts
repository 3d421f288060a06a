// Prepares and statement Describes answered without a backend (transaction pooling): what one
// client's backend accepted and described, another client of the same pool gets from the pooler,
// with the same bytes; anything else still goes to a backend, in order.
import { describe, expect, it } from 'vitest';
import { ServerSessionState } from '../backend/session-state.js';
import type { BackendMessage } from '@quicpool/wire';
import { ClientSession } from './client-session.js';
import type { SessionAction } from './types.js';
import { clientMessages, raw, rawBackend, testContext } from '../../test/support/session-helpers.js';
import { PreparedRegistry } from '../prepared/registry.js';

const KEY = { processId: 42, secretKey: Buffer.from([1, 2, 3, 4]) };
const PARAMS = new Map([['server_version', '17.0']]);
const TEXT = 'select $1::int + 1 as n';
const PARAMETERS: BackendMessage = { type: 'ParameterDescription', parameterTypes: [23] };
const ROWS: BackendMessage = {
  type: 'RowDescription',
  fields: [{ name: 'n', tableOid: 0, columnAttributeNumber: 0, dataTypeOid: 23, dataTypeSize: 4, typeModifier: -1, format: 0 }],
};

function started(registry: PreparedRegistry): ClientSession {
  const s = new ClientSession(testContext());
  s.handle({ type: 'startupPacket', packet: { type: 'StartupMessage', protocolVersion: 196608, parameters: { user: 'alice', database: 'db' } } });
  s.handle({ type: 'serverParameters', parameters: PARAMS, cancelKey: KEY, prepared: registry });
  return s;
}

const client = (s: ClientSession, ...ms: Parameters<typeof raw>[0][]): SessionAction[] =>
  ms.flatMap((m) => s.handle({ type: 'clientMessage', message: raw(m) }));
const backend = (s: ClientSession, ...ms: BackendMessage[]): SessionAction[] =>
  ms.flatMap((m) => s.handle({ type: 'backendMessage', message: rawBackend(m) }));
const requested = (a: SessionAction[]): boolean => a.some((x) => x.type === 'requestBackend');
const toBackend = (a: SessionAction[]): string[] =>
  a.flatMap((x) => (x.type === 'sendToBackend' ? [String.fromCharCode(x.bytes[0]!)] : []));

/** A first client prepares and describes TEXT on a backend: the pool learns it. */
function learn(registry: PreparedRegistry): BackendMessage[] {
  const a = started(registry);
  expect(requested(client(a, { type: 'Parse', name: 's1', query: TEXT, parameterTypes: [] }, { type: 'Describe', target: 'S', name: 's1' }, { type: 'Sync' }))).toBe(true);
  a.handle({ type: 'backendAttached', backend: { parameters: PARAMS, parametersVersion: 0, sessionState: new ServerSessionState() } });
  return clientMessages(backend(a, { type: 'ParseComplete' }, PARAMETERS, ROWS, { type: 'ReadyForQuery', status: 'I' }));
}

describe('idle answers (transaction pooling, no backend attached)', () => {
  it('answers Parse + Describe + Sync of a known statement as the backend did, without a backend', () => {
    const registry = new PreparedRegistry(10);
    const direct = learn(registry);
    expect(registry.size).toBe(1);
    const b = started(registry);
    const a = client(b, { type: 'Parse', name: 'other', query: TEXT, parameterTypes: [] }, { type: 'Describe', target: 'S', name: 'other' }, { type: 'Sync' });
    expect(requested(a)).toBe(false);
    expect(clientMessages(a)).toEqual(direct);
    expect(b.preparedStatementCount).toBe(1);
    // Using it needs a backend: prepared there first (an injected Parse), then the renamed Bind.
    const run = client(b, { type: 'Bind', portal: '', statement: 'other', parameterFormats: [], parameters: [Buffer.from('1')], resultFormats: [] }, { type: 'Execute', portal: '', maxRows: 0 }, { type: 'Sync' });
    expect(requested(run)).toBe(true);
    expect(toBackend(b.handle({ type: 'backendAttached', backend: { parameters: PARAMS, parametersVersion: 0, sessionState: new ServerSessionState() } }))).toEqual(['P', 'B', 'E', 'S']);
  });

  it('a bare Parse + Sync (PQprepare) is answered with ParseComplete and the session status', () => {
    const registry = new PreparedRegistry(10);
    learn(registry);
    const a = client(started(registry), { type: 'Parse', name: 'p', query: TEXT, parameterTypes: [] }, { type: 'Sync' });
    expect(requested(a)).toBe(false);
    expect(clientMessages(a)).toEqual([{ type: 'ParseComplete' }, { type: 'ReadyForQuery', status: 'I' }]);
  });

  it('an unknown statement, or a group with other messages, goes to a backend whole and in order', () => {
    const registry = new PreparedRegistry(10);
    learn(registry);
    const s = started(registry);
    const unknown = client(s, { type: 'Parse', name: 'u', query: 'select 2', parameterTypes: [] });
    expect(requested(unknown)).toBe(true);
    const t = started(registry);
    const mixed = client(t, { type: 'Parse', name: 'k', query: TEXT, parameterTypes: [] }, { type: 'Bind', portal: '', statement: 'k', parameterFormats: [], parameters: [Buffer.from('1')], resultFormats: [] }, { type: 'Sync' });
    expect(clientMessages(mixed)).toEqual([]);
    expect(requested(mixed)).toBe(true);
    expect(toBackend(t.handle({ type: 'backendAttached', backend: { parameters: PARAMS, parametersVersion: 0, sessionState: new ServerSessionState() } }))).toEqual(['P', 'B', 'S']);
  });

  it('a statement whose Parse a backend refuses is forgotten', () => {
    const registry = new PreparedRegistry(10);
    learn(registry);
    const s = started(registry);
    client(s, { type: 'Parse', name: 'x', query: TEXT, parameterTypes: [] }, { type: 'Sync' });
    client(s, { type: 'Bind', portal: '', statement: 'x', parameterFormats: [], parameters: [Buffer.from('1')], resultFormats: [] }, { type: 'Execute', portal: '', maxRows: 0 }, { type: 'Sync' });
    s.handle({ type: 'backendAttached', backend: { parameters: PARAMS, parametersVersion: 0, sessionState: new ServerSessionState() } });
    const a = backend(s, { type: 'ErrorResponse', fields: { S: 'ERROR', V: 'ERROR', C: '42P01', M: 'relation does not exist' } }, { type: 'ReadyForQuery', status: 'I' });
    expect(clientMessages(a).map((m) => m.type)).toEqual(['ErrorResponse', 'ReadyForQuery']);
    expect(registry.size).toBe(0);
  });
});
