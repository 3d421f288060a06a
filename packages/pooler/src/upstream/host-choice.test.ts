// Host choice over logins whose outcome the test decides (the real logins are tested against
// real servers in test/faults/failover.test.ts).
import { describe, expect, it } from 'vitest';
import type { BackendConnection } from '../backend/connect.js';
import type { ServerAddress } from '../backend/dial.js';
import { BackendLoginError } from '../backend/login.js';
import { HostChoice } from './host-choice.js';
import type { ServerRole, TargetSessionAttrs } from '../backend/server-role.js';
import { loginFailurePasses, loginFailureReason, NO_TARGET } from './login-failure.js';

const A = { host: 'a', port: 5432 };
const B = { host: 'b', port: 5432 };
const C = { host: 'c', port: 5433 };
const PRIMARY: ServerRole = { standby: false, readOnly: false };
const STANDBY: ServerRole = { standby: true, readOnly: true };

/** Each host is down (undefined) or answers with a role; every dial and close is recorded. */
function hosts(roles: Map<string, ServerRole | undefined>, attrs: TargetSessionAttrs) {
  const dials: string[] = [];
  const closed: string[] = [];
  const moves: string[] = [];
  const choice = new HostChoice(
    () => [A, B, C],
    () => attrs,
    (server: ServerAddress) => {
      dials.push(server.host);
      const role = roles.get(server.host);
      if (role === undefined) return Promise.reject(new BackendLoginError('refused', undefined, 'ECONNREFUSED'));
      const c = { server, role, stream: { destroy: () => void closed.push(server.host) } };
      return Promise.resolve(c as unknown as BackendConnection);
    },
    (from, to) => void moves.push(`${from.host}->${to.host}`),
  );
  return { choice, dials, closed, moves };
}

describe('HostChoice', () => {
  it('logs in to the first host that qualifies, closing the ones of the wrong kind, and starts there next time', async () => {
    const h = hosts(new Map([['a', undefined], ['b', STANDBY], ['c', PRIMARY]]), 'read-write');
    expect((await h.choice.connect()).server).toBe(C);
    expect(h.dials).toEqual(['a', 'b', 'c']);
    expect(h.closed).toEqual(['b']);
    expect(h.moves).toEqual(['a->c']);
    h.dials.length = 0;
    await h.choice.connect();
    expect(h.dials).toEqual(['c']);
  });

  it('prefer-standby takes a standby, else any server', async () => {
    const withStandby = hosts(new Map([['a', PRIMARY], ['b', STANDBY], ['c', PRIMARY]]), 'prefer-standby');
    expect((await withStandby.choice.connect()).server).toBe(B);
    const without = hosts(new Map([['a', PRIMARY], ['b', undefined], ['c', PRIMARY]]), 'prefer-standby');
    expect((await without.choice.connect()).server).toBe(A);
    expect(without.dials).toEqual(['a', 'b', 'c', 'a']);
  });

  it('when hosts answer but none qualifies (a failover under way) the error passes; when none answers, the last error', async () => {
    const failing = hosts(new Map([['a', undefined], ['b', STANDBY], ['c', STANDBY]]), 'read-write');
    const e = await failing.choice.connect().catch((x: unknown) => x);
    expect(e).toBeInstanceOf(BackendLoginError);
    expect((e as BackendLoginError).message).toBe('no server is read-write (target_session_attrs): b:5432 is a standby; c:5433 is a standby');
    expect(loginFailureReason(e)).toBe(NO_TARGET);
    expect(loginFailurePasses(e)).toBe(true);
    const down = hosts(new Map(), 'any');
    expect(loginFailureReason(await down.choice.connect().catch((x: unknown) => x))).toBe('ECONNREFUSED');
  });

  it('leaves a host that no longer suits: the next login starts with the one after it', async () => {
    const h = hosts(new Map([['a', PRIMARY], ['b', PRIMARY], ['c', PRIMARY]]), 'read-write');
    await h.choice.connect();
    h.choice.leave(A);
    h.dials.length = 0;
    expect((await h.choice.connect()).server).toBe(B);
    expect(h.dials).toEqual(['b']);
  });
});

describe('login failures that pass', () => {
  it.each([
    [new BackendLoginError('x', undefined, 'ECONNREFUSED'), true],
    [new BackendLoginError('x', undefined, 'ECONNRESET'), true],
    [new BackendLoginError('x', { C: '57P03' }), true],
    [new BackendLoginError('x', { C: '53300' }), true],
    [new BackendLoginError('x', { C: '57P01' }), true],
    [new BackendLoginError('x', { C: '28P01' }), false],
    [new BackendLoginError('x', { C: '08004' }), false],
    [new BackendLoginError('x', { C: '3D000' }), false],
    [new BackendLoginError('timed out', undefined, 'ETIMEDOUT'), false],
    [new BackendLoginError('certificate', undefined, 'ERR_TLS_CERT'), false],
    [new Error('not a login error'), false],
  ])('%s passes: %s', (e, passes) => {
    expect(loginFailurePasses(e)).toBe(passes);
  });
});
