// The agent's local checks of its local clients: a local password list (SCRAM-SHA-256 on the
// loopback hop, so the WAN carries no SCRAM exchange per session) and the unix socket's peer
// credentials (the OS user must be the database user). Each refuses the peers it should refuse;
// and a pooler that still asks for a password after a local check refuses the session with 28000.
import { userInfo } from 'node:os';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SQLSTATE } from '@quicpool/wire';
import { pgInfo, rejection, startQuicPooler } from './helpers.js';
import type { TestPooler } from './helpers.js';
import { startAgent } from './agent-helpers.js';
import type { TestAgent } from './agent-helpers.js';

let pooler: TestPooler;
beforeAll(async () => {
  pooler = await startQuicPooler({ poolSize: 4 });
});
afterAll(async () => {
  await pooler?.close();
});

describe('local password list', () => {
  let agent: TestAgent;
  beforeAll(async () => {
    // The pooler lets trust_user in without a password (standing in for certificate
    // authentication of the agent); the agent checks the local password itself.
    agent = await startAgent(pooler.endpoint, {
      agent: { localChecks: { tcp: 'password', passwords: { [pgInfo.trustUser]: 'local secret', [pgInfo.user]: 'also local' } } },
    });
  });
  afterAll(async () => {
    await agent?.close();
  });
  const client = (user: string, password: string): pg.Client => new pg.Client({ host: '127.0.0.1', port: agent.port, user, password, database: pgInfo.database });

  it('the right password logs in (SCRAM with the agent, none with the pooler)', async () => {
    const c = client(pgInfo.trustUser, 'local secret');
    await c.connect();
    expect((await c.query<{ u: string }>('select current_user as u')).rows[0]?.u).toBe(pgInfo.trustUser);
    await c.end();
    expect(agent.agent.stats().localLogins).toBe(1);
  });

  it('a wrong password and an unknown user are refused with 28P01, before anything runs', async () => {
    const wrong = await rejection(client(pgInfo.trustUser, 'guess').connect());
    expect(wrong.code).toBe(SQLSTATE.INVALID_PASSWORD);
    expect(wrong.message).toBe(`password authentication failed for user "${pgInfo.trustUser}"`);
    const unknown = await rejection(client('nobody_here', 'local secret').connect());
    expect(unknown.code).toBe(SQLSTATE.INVALID_PASSWORD);
    expect(agent.agent.stats().refused['28P01']).toBe(2);
  });

  it('a pooler that asks for a password after the local check: 28000 saying why', async () => {
    const err = await rejection(client(pgInfo.user, 'also local').connect());
    expect(err.code).toBe(SQLSTATE.INVALID_AUTHORIZATION_SPECIFICATION);
    expect(err.message).toMatch(/the pooler asks for a password .* after the agent's local check/);
  });
});

describe('peer credentials on the unix socket', () => {
  let agent: TestAgent;
  beforeAll(async () => {
    agent = await startAgent(pooler.endpoint, { agent: { localChecks: { socket: 'peer' } } });
  });
  afterAll(async () => {
    await agent?.close();
  });

  it('is checked with SO_PEERCRED (the native module is built)', () => {
    expect(agent.agent.peerCheck.via).toBe('SO_PEERCRED');
  });

  it('a database user other than the OS user of the peer is refused with 28000', async () => {
    const c = new pg.Client({ host: agent.socketDir, port: agent.port, user: pgInfo.trustUser, database: pgInfo.database });
    const err = await rejection(c.connect());
    expect(err.code).toBe(SQLSTATE.INVALID_AUTHORIZATION_SPECIFICATION);
    expect(err.message).toBe(`peer authentication failed for user "${pgInfo.trustUser}" (the peer runs as OS user "${userInfo().username}")`);
    expect(agent.agent.stats().sessions).toBe(0);
  });

  it('the OS user itself passes the check and is carried to the pooler (which then decides)', async () => {
    const me = userInfo().username;
    const c = new pg.Client({ host: agent.socketDir, port: agent.port, user: me, password: 'x', database: pgInfo.database });
    // The test pooler knows no such user: its refusal comes from the pooler, not from the agent.
    const err = await rejection(c.connect());
    expect(err.code).toMatch(/^28/);
    expect(agent.agent.stats().sessions).toBe(1);
    expect(agent.agent.stats().refused['28000'] ?? 0).toBe(1);
  });

  it('TCP sessions are not peer-checked (there is no peer to ask)', async () => {
    const c = new pg.Client({ host: '127.0.0.1', port: agent.port, user: pgInfo.trustUser, database: pgInfo.database });
    await c.connect();
    expect((await c.query<{ one: number }>('select 1 as one')).rows[0]?.one).toBe(1);
    await c.end();
  });
});
