// The client's tracked parameters alone: startup values, the server's values at the greeting,
// changes the client makes (ParameterStatus), and the SET that brings a backend in line.
import { describe, expect, it } from 'vitest';
import { BackendDecoder, decodeFrontendMessage, encodeBackend } from '@quicpool/wire';
import { ParameterSync } from './parameter-sync.js';
import { ServerSessionState } from '../backend/session-state.js';
import type { AttachedBackend } from './types.js';

const KEY = { processId: 7, secretKey: Buffer.from([1, 2, 3, 4]) };
const SERVER = new Map([['server_version', '17.6'], ['TimeZone', 'UTC'], ['application_name', ''], ['client_encoding', 'UTF8']]);

function backend(parameters: Map<string, string>): AttachedBackend {
  return { parameters, parametersVersion: 0, sessionState: new ServerSessionState() };
}

const setQuery = (bytes: Buffer | null): string | null => {
  if (bytes === null) return null;
  const m = decodeFrontendMessage(bytes);
  return m.type === 'Query' ? m.query : `not a Query: ${m.type}`;
};

describe('ParameterSync', () => {
  it('greets with the server parameters, the client values in place of the server ones, then BackendKeyData', () => {
    const p = new ParameterSync();
    p.fromStartup(new Map([['application_name', 'app']]));
    const dec = new BackendDecoder();
    for (const b of p.greeting(SERVER, KEY)) dec.push(b);
    expect(dec.drain()).toEqual([
      { type: 'ParameterStatus', name: 'server_version', value: '17.6' },
      { type: 'ParameterStatus', name: 'TimeZone', value: 'UTC' },
      { type: 'ParameterStatus', name: 'application_name', value: 'app' },
      { type: 'ParameterStatus', name: 'client_encoding', value: 'UTF8' },
      { type: 'BackendKeyData', processId: 7, secretKey: Buffer.from([1, 2, 3, 4]) },
    ]);
  });

  it('sets on a backend exactly what differs, and nothing on one that matches', () => {
    const p = new ParameterSync();
    p.fromStartup(new Map([['application_name', 'app']]));
    p.greeting(SERVER, KEY);
    // A backend another client left with TimeZone changed and no application_name.
    const b = backend(new Map([...SERVER, ['TimeZone', 'Europe/Paris']]));
    expect(setQuery(p.applyTo(b))).toBe(`SELECT pg_catalog.set_config('application_name', $q$app$q$, false), pg_catalog.set_config('TimeZone', $q$UTC$q$, false);`);
    const same = backend(new Map([...SERVER, ['application_name', 'app']]));
    expect(p.applyTo(same)).toBeNull();
    expect(p.applyTo(same)).toBeNull(); // again: answered from the backend's memo
  });

  it("follows the client's own changes (ParameterStatus while it holds a backend)", () => {
    const p = new ParameterSync();
    p.greeting(SERVER, KEY);
    p.observe(encodeBackend({ type: 'ParameterStatus', name: 'search_path', value: 'app, public' }));
    p.observe(encodeBackend({ type: 'ParameterStatus', name: 'server_version', value: '99' })); // not tracked
    expect(p.searchPath).toBe('app, public');
    expect(setQuery(p.applyTo(backend(new Map(SERVER))))).toBe(`SELECT pg_catalog.set_config('search_path', $q$app, public$q$, false);`);
  });

  it("a backend's memo is dropped when its parameters change (parametersVersion)", () => {
    const p = new ParameterSync();
    p.greeting(SERVER, KEY);
    const parameters = new Map(SERVER);
    const b = { parameters, parametersVersion: 0, sessionState: new ServerSessionState() };
    expect(p.applyTo(b)).toBeNull();
    parameters.set('TimeZone', 'Asia/Tokyo');
    b.parametersVersion = 1;
    expect(setQuery(p.applyTo(b))).toBe(`SELECT pg_catalog.set_config('TimeZone', $q$UTC$q$, false);`);
  });

  it('parameters the server does not report: SET where the pooler left another value, RESET where a client set none', () => {
    const a = new ParameterSync();
    a.fromStartup(new Map([['statement_timeout', '5s'], ['lock_timeout', '1s']]));
    a.greeting(SERVER, KEY);
    const b = new ParameterSync();
    b.greeting(SERVER, KEY);
    const shared = { parameters: new Map(SERVER), parametersVersion: 0, sessionState: new ServerSessionState() };
    expect(b.applyTo(shared)).toBeNull();
    expect(setQuery(a.applyTo(shared))).toBe(`SELECT pg_catalog.set_config('statement_timeout', $q$5s$q$, false), pg_catalog.set_config('lock_timeout', $q$1s$q$, false);`);
    expect(a.applyTo(shared)).toBeNull(); // the backend has them now
    expect(setQuery(b.applyTo(shared))).toBe(`RESET "statement_timeout";RESET "lock_timeout";`);
    expect(b.applyTo(shared)).toBeNull(); // the memo of b's earlier match was dropped, and it matches again
    // After the pool's reset (DISCARD ALL) nothing is known: every one is SET or RESET once.
    shared.sessionState.settingsReset();
    expect(setQuery(a.applyTo(shared))).toMatch(/^SELECT pg_catalog\.set_config\('statement_timeout', \$q\$5s\$q\$, false\), pg_catalog\.set_config\('lock_timeout', \$q\$1s\$q\$, false\);RESET "DateStyle";.*RESET "default_transaction_read_only";$/);
  });
});
