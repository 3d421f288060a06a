// Hostile or broken input at the byte level over TCP: malformed and oversized startup packets,
// wrong protocol versions, messages over the limit, truncated messages, unknown message types and
// messages before authentication. Each is answered with a FATAL ErrorResponse carrying the right
// SQLSTATE (or a clean close when nothing can be answered), never a crash or a hang; after each
// the pooler still serves a good client and holds no session for the attacker.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeFrontend, encodeStartupPacket } from '@quicpool/wire';
import { pgInfo, startPooler, withClient } from '../support/pooler-helpers.js';
import type { TestPooler } from '../support/pooler-helpers.js';
import { eventually, PROTOCOL_3_0, rawStartupPacket, rawTcp, trustStartup, typedMessage } from './helpers.js';
import type { RawSession } from './helpers.js';

const MAX_MESSAGE = 64 * 1024;
let p: TestPooler;

beforeAll(async () => {
  p = await startPooler({ maxMessageSize: MAX_MESSAGE, authTimeoutMs: 3000, authFailureDelayMs: 50, pool: { poolSize: 2 } });
});
afterAll(async () => {
  await p.close();
});

/** The session ended with exactly one FATAL ErrorResponse of `sqlstate` as its last message. */
async function expectFatal(s: RawSession, sqlstate: string): Promise<void> {
  const ms = await s.closedByPeer();
  expect(s.closed).toBe(true);
  const last = ms[ms.length - 1];
  expect(last).toMatchObject({ type: 'ErrorResponse', fields: { S: 'FATAL', C: sqlstate } });
  expect(s.errorCodes).toEqual([sqlstate]);
}

/** A good client is served, and nothing of the attacker is left in the pooler. */
async function stillServes(): Promise<void> {
  await withClient(p.clientConfig(), async (c) => {
    expect((await c.query('select 1 as one')).rows).toEqual([{ one: 1 }]);
  });
  await eventually(() => p.pooler.stats().clients === 0, 5000, 'no client session left');
}

async function loggedIn(): Promise<RawSession> {
  const s = rawTcp(p.port);
  s.write(trustStartup());
  await s.until(() => s.ready);
  return s;
}

describe('malformed and oversized startup packets', () => {
  const cases: [string, () => Buffer][] = [
    ['a length of 1,000,000 bytes (limit 10,000)', () => rawStartupPacket(PROTOCOL_3_0, Buffer.alloc(0), 1_000_000)],
    ['a length of 10,001 bytes, sent in full', () => rawStartupPacket(PROTOCOL_3_0, Buffer.alloc(10_001 - 8, 0x61))],
    ['a length below the 8-byte minimum', () => rawStartupPacket(PROTOCOL_3_0, Buffer.alloc(0), 4)],
    ['a negative length', () => rawStartupPacket(PROTOCOL_3_0, Buffer.alloc(0), -1)],
    ['parameters without the final terminator', () => rawStartupPacket(PROTOCOL_3_0, Buffer.from('user\0x\0database'))],
    ['a parameter name with no value', () => rawStartupPacket(PROTOCOL_3_0, Buffer.from('user\0'))],
    ['bytes after the terminator', () => rawStartupPacket(PROTOCOL_3_0, Buffer.from('user\0x\0\0junk'))],
    ['a CancelRequest with a 3-byte key', () => rawStartupPacket(80877102, Buffer.from([0, 0, 0, 1, 9, 9, 9]))],
    ['an SSLRequest with a body', () => rawStartupPacket(80877103, Buffer.from([1, 2, 3, 4]))],
    ['a typed message instead of a startup packet', () => encodeFrontend({ type: 'Query', query: 'select 1' })],
  ];
  for (const [name, bytes] of cases) {
    it(`answers ${name} with 08P01 and closes`, async () => {
      const s = rawTcp(p.port);
      s.write(bytes());
      await expectFatal(s, '08P01');
      await stillServes();
    });
  }

  it('answers a second SSLRequest with 08P01 (the first gets N: no TLS configured)', async () => {
    const s = rawTcp(p.port).expectSslAnswers(1);
    s.write(Buffer.concat([rawStartupPacket(80877103), rawStartupPacket(80877103)]));
    await expectFatal(s, '08P01');
    expect(s.sslAnswers).toEqual(['N']);
    await stillServes();
  });

  it('answers a StartupMessage without a user with 28000', async () => {
    const s = rawTcp(p.port);
    s.write(encodeStartupPacket({ type: 'StartupMessage', protocolVersion: PROTOCOL_3_0, parameters: { database: pgInfo.database } }));
    await expectFatal(s, '28000');
    await stillServes();
  });

  it('answers an unsupported startup parameter (options, replication) with 0A000', async () => {
    for (const extra of [{ options: '-c work_mem=1GB' }, { replication: 'database' }] as Record<string, string>[]) {
      const s = rawTcp(p.port);
      s.write(trustStartup(extra));
      await expectFatal(s, '0A000');
    }
    await stillServes();
  });
});

describe('wrong protocol versions', () => {
  for (const [major, minor] of [
    [2, 0],
    [4, 0],
    [1, 0],
    [0xffff, 0xffff],
  ] as const) {
    it(`refuses protocol ${major}.${minor} with 08P01`, async () => {
      const s = rawTcp(p.port);
      s.write(rawStartupPacket(((major << 16) | minor) >>> 0, Buffer.from(`user\0${pgInfo.trustUser}\0\0`)));
      await expectFatal(s, '08P01');
      const error = s.messages.find((m) => m.type === 'ErrorResponse');
      expect(error?.type === 'ErrorResponse' && error.fields.M).toContain(`unsupported frontend protocol ${major}.${minor}`);
      await stillServes();
    });
  }

  it('answers 3.99 with NegotiateProtocolVersion (3.2) and serves the session', async () => {
    const s = rawTcp(p.port);
    try {
      s.write(trustStartup({}, (3 << 16) | 99));
      await s.until(() => s.ready);
      expect(s.messages[0]).toMatchObject({ type: 'NegotiateProtocolVersion', newestProtocolVersion: (3 << 16) | 2 });
      s.write(encodeFrontend({ type: 'Query', query: 'select 7' }));
      await s.until((m) => m.some((x) => x.type === 'DataRow'));
      expect(s.errorCodes).toEqual([]);
    } finally {
      s.destroy();
    }
    await stillServes();
  });
});

describe('typed messages after login', () => {
  it(`refuses a message longer than maxMessageSize (${MAX_MESSAGE}) from its header alone, with 08P01`, async () => {
    const s = await loggedIn();
    s.write(typedMessage('Q', Buffer.alloc(0), MAX_MESSAGE + 1)); // the 64 KiB body is never sent
    await expectFatal(s, '08P01');
    await stillServes();
  });

  it('refuses a 2 GiB length with 08P01 without waiting for (or allocating) the body', async () => {
    const s = await loggedIn();
    s.write(typedMessage('B', Buffer.alloc(0), 0x7fffffff));
    await expectFatal(s, '08P01');
    await stillServes();
  });

  it('refuses a length below 4 and a Sync with a body (per-type limits) with 08P01', async () => {
    for (const bytes of [typedMessage('Q', Buffer.alloc(0), 3), typedMessage('S', Buffer.alloc(100_000))]) {
      const s = await loggedIn();
      s.write(bytes);
      await expectFatal(s, '08P01');
    }
    await stillServes();
  });

  for (const type of [0x00, 0x7a /* z */, 0xff, 0x21 /* ! */]) {
    it(`refuses unknown message type 0x${type.toString(16)} with 08P01`, async () => {
      const s = await loggedIn();
      s.write(typedMessage(type, Buffer.from('abc')));
      await expectFatal(s, '08P01');
      await stillServes();
    });
  }

  it('refuses a second StartupMessage after login with 08P01', async () => {
    const s = await loggedIn();
    s.write(trustStartup());
    await expectFatal(s, '08P01');
    await stillServes();
  });

  it('closes cleanly on a truncated message (header promises more, then FIN) and frees its backend', async () => {
    const s = await loggedIn();
    // A whole Query first, so the session holds a backend, then half of the next message.
    s.write(encodeFrontend({ type: 'Query', query: 'begin; select 1' }));
    await s.until((m) => m.filter((x) => x.type === 'ReadyForQuery').length === 2);
    const q = encodeFrontend({ type: 'Query', query: 'select 123456789' });
    s.write(q.subarray(0, 9));
    s.stream.end();
    await s.closedByPeer();
    expect(s.errorCodes).toEqual([]);
    await stillServes();
    await eventually(() => (p.pooler.stats().pools.find((x) => x.user === pgInfo.trustUser)?.active ?? 1) === 0, 5000, 'backend released');
  });

  it('closes cleanly on a truncated startup packet (5 of 8 header bytes, then FIN)', async () => {
    const s = rawTcp(p.port);
    s.write(trustStartup().subarray(0, 5));
    s.stream.end();
    await s.closedByPeer();
    expect(s.messages).toEqual([]);
    await stillServes();
  });
});

describe('messages before authentication', () => {
  const scramStartup = (): Buffer =>
    encodeStartupPacket({ type: 'StartupMessage', protocolVersion: PROTOCOL_3_0, parameters: { user: pgInfo.user, database: pgInfo.database } });

  for (const [name, bytes] of [
    ['a Query', encodeFrontend({ type: 'Query', query: 'select pg_sleep(0)' })],
    ['a Parse', encodeFrontend({ type: 'Parse', name: '', query: 'select 1', parameterTypes: [] })],
    ['a Sync', encodeFrontend({ type: 'Sync' })],
    ['a Terminate', encodeFrontend({ type: 'Terminate' })],
  ] as const) {
    it(`refuses ${name} sent right after the StartupMessage (SCRAM asked for) with 08P01; nothing reaches a backend`, async () => {
      const before = p.pooler.stats().pools.find((x) => x.user === pgInfo.user)?.connectsTotal ?? 0;
      const s = rawTcp(p.port);
      s.write(Buffer.concat([scramStartup(), bytes]));
      await expectFatal(s, '08P01');
      expect(s.messages[0]?.type).toBe('AuthenticationSASL');
      expect(p.pooler.stats().pools.find((x) => x.user === pgInfo.user)?.connectsTotal ?? 0).toBe(before);
      await stillServes();
    });
  }

  it('answers a garbage SASLInitialResponse (unknown mechanism, bad payload) with 28P01', async () => {
    for (const body of [
      Buffer.concat([Buffer.from('SCRAM-SHA-1\0'), Buffer.from([0, 0, 0, 3]), Buffer.from('xyz')]),
      Buffer.concat([Buffer.from('SCRAM-SHA-256\0'), Buffer.from([0, 0, 0, 5]), Buffer.from('n,,zz')]),
    ]) {
      const s = rawTcp(p.port);
      s.write(Buffer.concat([scramStartup(), typedMessage('p', body)]));
      await expectFatal(s, '28P01');
    }
    await stillServes();
  });

  it('answers a malformed SASLInitialResponse (length field beyond the message) with 08P01', async () => {
    const s = rawTcp(p.port);
    s.write(Buffer.concat([scramStartup(), typedMessage('p', Buffer.concat([Buffer.from('SCRAM-SHA-256\0'), Buffer.from([0, 0, 0x10, 0])]))]));
    await expectFatal(s, '08P01');
    await stillServes();
  });

  it('refuses an authentication message over 65,535 bytes (before any password is checked) with 08P01', async () => {
    const s = rawTcp(p.port);
    s.write(Buffer.concat([scramStartup(), typedMessage('p', Buffer.alloc(0), 70_000)]));
    await expectFatal(s, '08P01');
    await stillServes();
  });
});
