// 0-RTT early data and replay. A resumed QUIC client sends its StartupMessage and first query in
// its first flight. The pooler runs startup and authentication on such early data (no side
// effects) but sends nothing to a backend (no query, no cancel) before the QUIC handshake is
// confirmed. An attacker who recorded that first flight and replays it gets a connection whose
// handshake never completes: the replayed query never runs. The test records the first flight
// with a UDP proxy, replays it from another socket, and counts the rows the query inserts.
import dgram from 'node:dgram';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeFrontend } from '@quicpool/wire';
import { generateDevCertificates, QuicDialer, QuicListener, QuicTicketStore } from '@quicpool/transport';
import { createPooler } from '../support/create-pooler.js';
import type { Pooler } from '../../src/index.js';
import { pgInfo, withClient } from '../support/pooler-helpers.js';
import { eventually, RawSession, sleep, trustStartup } from '../hostile/helpers.js';

const TABLE = 'security_early_rows';
const direct = { host: pgInfo.host, port: pgInfo.port, user: pgInfo.user, password: pgInfo.password, database: pgInfo.database };
let pooler: Pooler;
let listener: QuicListener;
let ca: string;
const closers: (() => Promise<void> | void)[] = [];

beforeAll(async () => {
  const certs = await generateDevCertificates({ names: ['localhost'] });
  ca = certs.caPem;
  pooler = createPooler({ server: { host: pgInfo.host, port: pgInfo.port }, users: { [pgInfo.trustUser]: { auth: 'trust' } } });
  listener = await QuicListener.listen({ cert: certs.certPem, key: certs.keyPem, host: '127.0.0.1', port: 0, ticketKey: randomBytes(48), idleTimeoutMs: 1500 });
  pooler.listen(listener);
  await withClient(direct, async (c) => {
    await c.query(`drop table if exists ${TABLE}; create table ${TABLE} (x int); grant all on ${TABLE} to public`);
  });
});
afterAll(async () => {
  for (const c of closers.reverse()) await c();
  await pooler.close({ graceful: false });
});

const rows = async (): Promise<number> => withClient(direct, async (c) => (await c.query(`select count(*)::int as n from ${TABLE}`)).rows[0].n as number);

/** A UDP relay that records what the client sends before the server's first answer. */
async function recordingProxy(serverPort: number): Promise<{ port: number; firstFlight: Buffer[]; recordNextFlight(): void }> {
  const front = dgram.createSocket('udp4');
  const back = dgram.createSocket('udp4');
  const firstFlight: Buffer[] = [];
  let answered = false;
  let client: { address: string; port: number } | null = null;
  front.on('message', (msg, rinfo) => {
    client = { address: rinfo.address, port: rinfo.port };
    if (!answered) firstFlight.push(Buffer.from(msg));
    back.send(msg, serverPort, '127.0.0.1');
  });
  back.on('message', (msg) => {
    answered = true;
    if (client !== null) front.send(msg, client.port, client.address);
  });
  await new Promise<void>((r) => front.bind(0, '127.0.0.1', r));
  await new Promise<void>((r) => back.bind(0, '127.0.0.1', r));
  closers.push(() => {
    front.close();
    back.close();
  });
  return {
    port: (front.address() as AddressInfo).port,
    firstFlight,
    recordNextFlight() {
      firstFlight.length = 0;
      answered = false;
    },
  };
}

describe('0-RTT early data', () => {
  it('runs a query sent as early data once, and never the replay of that first flight', async () => {
    const port = listener.address().port;
    const tickets = new QuicTicketStore();
    // Tickets are kept per address: both connections go through the relay.
    const proxy = await recordingProxy(port);
    // A first connection obtains a session ticket.
    const first = new QuicDialer({ host: '127.0.0.1', port: proxy.port, serverName: 'localhost', ca, tickets });
    closers.push(() => first.close({ graceful: false }));
    const s1 = await first.open();
    s1.on('error', () => undefined);
    const r1 = new RawSession(s1);
    r1.write(trustStartup());
    await r1.until(() => r1.ready);
    s1.end();
    await eventually(() => tickets.size === 1, 3000, 'a session ticket');
    await first.close({ graceful: false });

    // The resumed connection: StartupMessage + INSERT in its first flight, which the relay records.
    proxy.recordNextFlight();
    const resumed = new QuicDialer({ host: '127.0.0.1', port: proxy.port, serverName: 'localhost', ca, tickets });
    closers.push(() => resumed.close({ graceful: false }));
    const earlyBefore = pooler.view().earlyDataSessionsTotal;
    const s2 = await resumed.open();
    s2.on('error', () => undefined);
    expect(s2.info.quic?.earlyData).toBe(true);
    const r2 = new RawSession(s2);
    r2.write(Buffer.concat([trustStartup(), encodeFrontend({ type: 'Query', query: `insert into ${TABLE} values (1)` })]));
    await r2.until((m) => m.filter((x) => x.type === 'ReadyForQuery').length === 2);
    expect(r2.errorCodes).toEqual([]);
    expect(pooler.view().earlyDataSessionsTotal - earlyBefore).toBe(1);
    expect(await rows()).toBe(1);
    expect(proxy.firstFlight.length).toBeGreaterThan(0);

    // The attacker replays the recorded first flight from another address.
    const attacker = dgram.createSocket('udp4');
    closers.push(() => {
      attacker.close();
    });
    await new Promise<void>((r) => attacker.bind(0, '127.0.0.1', r));
    for (const d of proxy.firstFlight) attacker.send(d, port, '127.0.0.1');
    // The pooler accepts the replayed early stream (it cannot know yet) ...
    await eventually(() => pooler.view().earlyDataSessionsTotal - earlyBefore === 2, 3000, 'the replayed early session reached the pooler');
    // ... but its query never reaches Postgres, and the session dies with its connection.
    await sleep(500);
    expect(await rows()).toBe(1);
    await eventually(() => pooler.stats().clients <= 1, 6000, 'the replayed session closed at the idle timeout');
    expect(await rows()).toBe(1);
    s2.end();
  });
});
