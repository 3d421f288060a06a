// The read-only 0-RTT policy (`earlyData: 'read-only'`). A resumed QUIC client sends its
// StartupMessage and queries in its first flight. A UDP relay holds every datagram the client sends
// after that flight (its handshake Finished among them), so the pooler's handshake cannot be
// confirmed until the test releases them: what is answered meanwhile ran before confirmation by
// construction, and the pooler-side stream says so (`replayWindow()` still open). Before
// confirmation: the SELECT is answered (inside the pooler's READ ONLY transaction, the client's
// ReadyForQuery says idle), a WITH that writes is refused by PostgreSQL with 25006, and the INSERT
// waits; after the release the INSERT runs. A replay of the recorded first flight writes nothing.
import dgram from 'node:dgram';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { BackendMessage } from '@quicpool/wire';
import { encodeFrontend } from '@quicpool/wire';
import { generateDevCertificates, QuicDialer, QuicListener, QuicTicketStore } from '@quicpool/transport';
import type { SessionListener, SessionStream } from '@quicpool/transport';
import { createPooler } from '../support/create-pooler.js';
import type { Pooler } from '../../src/index.js';
import { pgInfo, withClient } from '../support/pooler-helpers.js';
import { eventually, RawSession, trustStartup } from '../hostile/helpers.js';

const TABLE = 'security_early_read_only';
const direct = { host: pgInfo.host, port: pgInfo.port, user: pgInfo.user, password: pgInfo.password, database: pgInfo.database };
let pooler: Pooler;
let listener: QuicListener;
let ca: string;
/** Every session stream the pooler was handed, in order. */
const accepted: SessionStream[] = [];
const closers: (() => Promise<void> | void)[] = [];

beforeAll(async () => {
  const certs = await generateDevCertificates({ names: ['localhost'] });
  ca = certs.caPem;
  pooler = createPooler({ server: { host: pgInfo.host, port: pgInfo.port }, users: { [pgInfo.trustUser]: { auth: 'trust' } }, earlyData: 'read-only' });
  listener = await QuicListener.listen({ cert: certs.certPem, key: certs.keyPem, host: '127.0.0.1', port: 0, ticketKey: randomBytes(48), idleTimeoutMs: 1500 });
  // The pooler's listener, seen through a window that keeps the streams it hands out.
  const spy: SessionListener = {
    kind: 'quic',
    address: () => listener.address(),
    onSession: (handler) => listener.onSession((s) => {
      accepted.push(s);
      handler(s);
    }),
    close: (o) => listener.close(o),
  };
  pooler.listen(spy);
  await withClient(direct, async (c) => {
    await c.query(`drop table if exists ${TABLE}; create table ${TABLE} (x int); grant all on ${TABLE} to public`);
  });
});
afterAll(async () => {
  for (const c of closers.reverse()) await c();
  await pooler.close({ graceful: false });
});

const rows = async (): Promise<number[]> => withClient(direct, async (c) => (await c.query<{ x: number }>(`select x from ${TABLE} order by x`)).rows.map((r) => r.x));

/** A UDP relay that records the client's first flight and can hold everything the client sends after it. */
async function holdingRelay(serverPort: number): Promise<{ port: number; firstFlight: Buffer[]; held: Buffer[]; nextFlight(hold: boolean): void; release(): void }> {
  const front = dgram.createSocket('udp4');
  const back = dgram.createSocket('udp4');
  const firstFlight: Buffer[] = [];
  const held: Buffer[] = [];
  let answered = false;
  let holding = false;
  let client: { address: string; port: number } | null = null;
  front.on('message', (msg, rinfo) => {
    client = { address: rinfo.address, port: rinfo.port };
    if (!answered) firstFlight.push(Buffer.from(msg));
    else if (holding) {
      held.push(Buffer.from(msg));
      return;
    }
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
    held,
    nextFlight(hold: boolean) {
      firstFlight.length = 0;
      answered = false;
      holding = hold;
    },
    release() {
      holding = false;
      for (const d of held.splice(0)) back.send(d, serverPort, '127.0.0.1');
    },
  };
}

const readies = (m: readonly BackendMessage[]): string[] => m.flatMap((x) => (x.type === 'ReadyForQuery' ? [x.status] : []));
const query = (sql: string): Buffer => encodeFrontend({ type: 'Query', query: sql });

it('answers a read-only first query before the handshake is confirmed; writes wait for it; a replay writes nothing', async () => {
  const port = listener.address().port;
  const tickets = new QuicTicketStore();
  const relay = await holdingRelay(port);
  const first = new QuicDialer({ host: '127.0.0.1', port: relay.port, serverName: 'localhost', ca, tickets });
  closers.push(() => first.close({ graceful: false }));
  const s1 = await first.open();
  const r1 = new RawSession(s1);
  r1.write(trustStartup());
  await r1.until(() => r1.ready);
  s1.end();
  await eventually(() => tickets.size === 1, 3000, 'a session ticket');
  await first.close({ graceful: false });

  relay.nextFlight(true);
  const resumed = new QuicDialer({ host: '127.0.0.1', port: relay.port, serverName: 'localhost', ca, tickets });
  closers.push(() => resumed.close({ graceful: false }));
  const s2 = await resumed.open();
  expect(s2.info.quic?.earlyData).toBe(true);
  const r2 = new RawSession(s2);
  r2.write(Buffer.concat([
    trustStartup(),
    query('select 42 as answer'),
    query(`with w as (insert into ${TABLE} values (2) returning x) select * from w`),
    query(`insert into ${TABLE} values (1)`),
  ]));
  // Login, the SELECT and the refused WITH are answered while the client's Finished is held.
  await r2.until((m) => readies(m).length === 3);
  const server = accepted.at(-1)!;
  expect(server.info.quic?.earlyData).toBe(true);
  // Not confirmed (the client's Finished is held, or not even sent yet): everything so far ran before.
  expect(server.replayWindow()).not.toBeNull();
  expect(r2.messages.find((m) => m.type === 'DataRow')).toMatchObject({ values: [Buffer.from('42')] });
  expect(r2.errorCodes).toEqual(['25006']); // the WITH that writes, refused by READ ONLY
  expect(readies(r2.messages)).toEqual(['I', 'I', 'I']); // the pooler's own BEGIN/COMMIT are invisible
  expect(await rows()).toEqual([]); // the INSERT waits

  relay.release();
  await r2.until((m) => readies(m).length === 4);
  expect(server.replayWindow()).toBeNull();
  expect(r2.messages.filter((m) => m.type === 'CommandComplete').map((m) => (m as { tag: string }).tag)).toEqual(['SELECT 1', 'INSERT 0 1']);
  expect(await rows()).toEqual([1]);
  s2.end();

  // The attacker replays the recorded first flight (StartupMessage and all three queries).
  const before = accepted.length;
  const attacker = dgram.createSocket('udp4');
  closers.push(() => {
    attacker.close();
  });
  await new Promise<void>((r) => attacker.bind(0, '127.0.0.1', r));
  for (const d of relay.firstFlight) attacker.send(d, port, '127.0.0.1');
  await eventually(() => accepted.length === before + 1, 3000, 'the replayed early session reached the pooler');
  const replayed = accepted.at(-1)!;
  const window = replayed.replayWindow();
  expect(window).not.toBeNull();
  const neverConfirmed = window?.then(() => false, () => true);
  // Its handshake never completes: its connection dies at the idle timeout, the session with it.
  expect(await neverConfirmed).toBe(true);
  await eventually(() => replayed.destroyed, 6000, 'the replayed session ended');
  expect(await rows()).toEqual([1]);
});
