// The startup piece alone, with a recording owner: SSL/GSS answers, cancel routing, protocol
// negotiation, admission, each authentication method, and the held failure of the auth-failure
// delay.
import { describe, expect, it } from 'vitest';
import { BackendDecoder, encodeFrontend } from '@quicpool/wire';
import type { BackendMessage, RawMessage, StartupPacket } from '@quicpool/wire';
import { testContext } from '../../test/support/session-helpers.js';
import { StartupAuth } from './startup-auth.js';
import type { StartupOwner } from './startup-auth.js';
import type { SessionAction } from './types.js';

interface Recorded {
  sent: Buffer[];
  actions: SessionAction[];
  failed: { sqlstate: string; message: string }[];
  closed: number;
  authenticated: { database: string; user: string; tracked: ReadonlyMap<string, string> }[];
}

function setup(opts: Parameters<typeof testContext>[0] = {}, delay = false): { s: StartupAuth; r: Recorded } {
  const r: Recorded = { sent: [], actions: [], failed: [], closed: 0, authenticated: [] };
  const owner: StartupOwner = {
    send: (b) => r.sent.push(b),
    emit: (a) => r.actions.push(a),
    fail: (sqlstate, message) => r.failed.push({ sqlstate, message }),
    close: () => r.closed++,
    authenticated: (database, user, tracked) => r.authenticated.push({ database, user, tracked }),
  };
  return { s: new StartupAuth({ ...testContext(opts), authFailureDelay: delay }, owner), r };
}

const startup = (parameters: Record<string, string>, protocolVersion = 196608): StartupPacket => ({ type: 'StartupMessage', protocolVersion, parameters });
const messages = (r: Recorded): BackendMessage[] => {
  const d = new BackendDecoder();
  for (const b of r.sent) if (b.length > 1) d.push(b);
  return d.drain();
};
const password = (p: string): RawMessage => {
  const bytes = encodeFrontend({ type: 'PasswordMessage', password: p });
  return { type: bytes[0]!, bytes };
};

describe('StartupAuth', () => {
  it("answers SSLRequest S only on TCP with a certificate, GSSENCRequest always N, a second SSLRequest is a protocol violation", () => {
    const tcp = setup({ transport: 'tcp', tls: true });
    tcp.s.startupPacket({ type: 'SSLRequest' });
    expect(tcp.r.sent.map(String)).toEqual(['S']);
    expect(tcp.r.actions).toEqual([{ type: 'startTls' }]);
    tcp.s.startupPacket({ type: 'SSLRequest' });
    expect(tcp.r.failed).toEqual([{ sqlstate: '08P01', message: 'duplicate SSLRequest' }]);
    const quic = setup({ transport: 'quic', tls: true });
    quic.s.startupPacket({ type: 'SSLRequest' });
    quic.s.startupPacket({ type: 'GSSENCRequest' });
    expect(quic.r.sent.map(String)).toEqual(['N', 'N']);
  });

  it('routes a CancelRequest and closes', () => {
    const { s, r } = setup();
    s.startupPacket({ type: 'CancelRequest', processId: 9, secretKey: Buffer.from([5, 6, 7, 8]) });
    expect(r.actions).toEqual([{ type: 'cancel', processId: 9, secretKey: Buffer.from([5, 6, 7, 8]) }]);
    expect(r.closed).toBe(1);
  });

  it('negotiates 3.2 down from 3.9 and names unknown _pq_ options, then goes on (trust)', () => {
    const { s, r } = setup();
    s.startupPacket(startup({ user: 'alice', database: 'db', '_pq_.x': '1', application_name: 'a' }, (3 << 16) | 9));
    expect(s.protocolMinor).toBe(2);
    expect(messages(r)).toEqual([
      { type: 'NegotiateProtocolVersion', newestProtocolVersion: (3 << 16) | 2, unrecognizedOptions: ['_pq_.x'] },
      { type: 'AuthenticationOk' },
    ]);
    expect(r.authenticated).toEqual([{ database: 'db', user: 'alice', tracked: new Map([['application_name', 'a']]) }]);
    expect(s.admitted).toBe(true);
  });

  it('refuses what admission refuses, and does not count the client as admitted', () => {
    const { s, r } = setup({ refuse: true });
    s.startupPacket(startup({ user: 'alice' }));
    expect(r.failed).toEqual([{ sqlstate: '53300', message: 'sorry, too many clients already' }]);
    expect(s.admitted).toBe(false);
  });

  it('cleartext password over an encrypted transport: right and wrong', () => {
    const users = { bob: { password: 'pw', auth: 'password' as const } };
    const ok = setup({ transport: 'quic', users });
    ok.s.startupPacket(startup({ user: 'bob' }));
    expect(messages(ok.r)).toEqual([{ type: 'AuthenticationCleartextPassword' }]);
    expect(ok.s.authenticating).toBe(true);
    ok.s.authResponse(password('pw'));
    expect(ok.r.authenticated).toHaveLength(1);
    const bad = setup({ transport: 'quic', users });
    bad.s.startupPacket(startup({ user: 'bob' }));
    bad.s.authResponse(password('nope'));
    expect(bad.r.failed).toEqual([{ sqlstate: '28P01', message: 'password authentication failed for user "bob"' }]);
  });

  it('with the failure delay, a wrong password is held (its timer armed) and sent when the delay is over', () => {
    const { s, r } = setup({ transport: 'quic', users: { bob: { password: 'pw', auth: 'password' } } }, true);
    s.startupPacket(startup({ user: 'bob' }));
    s.authResponse(password('nope'));
    expect(r.failed).toEqual([]);
    expect(s.holdingFailure).toBe(true);
    expect(r.actions).toContainEqual({ type: 'timer', timer: 'authFailure', armed: true });
    s.authResponse(password('pw')); // input while held is discarded, even the right password
    expect(r.authenticated).toEqual([]);
    s.failureDelayOver();
    expect(r.failed).toEqual([{ sqlstate: '28P01', message: 'password authentication failed for user "bob"' }]);
    expect(s.holdingFailure).toBe(false);
  });

  it('a message other than an authentication response while authenticating is a protocol violation', () => {
    const { s, r } = setup({ transport: 'quic', users: { bob: { password: 'pw', auth: 'password' } } });
    s.startupPacket(startup({ user: 'bob' }));
    const q = encodeFrontend({ type: 'Query', query: 'select 1' });
    s.authResponse({ type: q[0]!, bytes: q });
    expect(r.failed).toEqual([{ sqlstate: '08P01', message: 'expected an authentication response' }]);
  });
});
