// Small pieces of the QUIC endpoint on their own: CID routing keys, seen-stream bookkeeping,
// ticket store bounds, and an endpoint shrugging off datagrams that belong to nobody.
import dgram from 'node:dgram';
import { randomBytes } from 'node:crypto';
import { expect, test } from 'vitest';
import { CID_LEN, newCid, routeKey } from '../src/quic/routing/cid.js';
import { SeenIds } from '../src/quic/stream-ids.js';
import { RetryTokens } from '../src/quic/routing/retry.js';
import { QuicListener, QuicTicketStore } from '../src/quic/index.js';
import { devCerts, waitFor } from './quic-helpers.js';
import { CLOSED_ROUTE_MS, ClosedRoutes, MAX_CLOSED_ROUTES } from '../src/quic/routing/closed.js';

test('routeKey reads the first 6 CID bytes as one integer, wherever the CID sits', () => {
  const cid = Uint8Array.from([0xff, 0xee, 0x01, 0x02, 0x03, 0x04, 0x99, 0x98]);
  expect(routeKey(cid, 0)).toBe(0xffee01020304);
  const packet = new Uint8Array(1 + CID_LEN + 20);
  packet[0] = 0x40;
  packet.set(cid, 1);
  expect(routeKey(packet, 1)).toBe(routeKey(cid, 0));
  const taken = new Set<number>();
  for (let i = 0; i < 1000; i++) {
    const { cid: c, key } = newCid(taken);
    expect(c.length).toBe(CID_LEN);
    expect(taken.has(key)).toBe(false);
    taken.add(key);
  }
});

test('SeenIds remembers client stream ids in and out of order with a bounded set', () => {
  const seen = new SeenIds();
  seen.add(0);
  seen.add(8); // 4 not yet seen (reordered)
  expect(seen.has(0)).toBe(true);
  expect(seen.has(4)).toBe(false);
  expect(seen.has(8)).toBe(true);
  seen.add(4);
  expect(seen.has(4)).toBe(true);
  expect(seen.has(12)).toBe(false);
});

test('retry tokens validate only for the same address, unmodified and fresh', () => {
  const tokens = new RetryTokens(undefined, 10_000);
  const odcid = randomBytes(16);
  const t = tokens.mint(odcid, '127.0.0.1', 5000, 1_000_000);
  expect(tokens.validate(t, '127.0.0.1', 5000, 1_001_000)).toEqual(Uint8Array.from(odcid));
  expect(tokens.validate(t, '127.0.0.1', 5001, 1_001_000)).toBeNull();
  expect(tokens.validate(t, '127.0.0.1', 5000, 1_020_000)).toBeNull();
  const forged = Buffer.from(t);
  forged[10] = forged[10]! ^ 1;
  expect(tokens.validate(forged, '127.0.0.1', 5000, 1_001_000)).toBeNull();
  expect(new RetryTokens().validate(t, '127.0.0.1', 5000, 1_001_000)).toBeNull();
});

test('the ticket store keeps the newest ticket per server and a bounded number of servers', () => {
  const store = new QuicTicketStore(2);
  store.set('a', Uint8Array.of(1));
  store.set('a', Uint8Array.of(2));
  store.set('b', Uint8Array.of(3));
  store.set('c', Uint8Array.of(4));
  expect(store.size).toBe(2);
  expect(store.get('a')).toBeUndefined();
  expect(store.get('c')).toEqual(Uint8Array.of(4));
});

test('datagrams for unknown connections and garbage are dropped without harm', async () => {
  const c = await devCerts();
  const listener = await QuicListener.listen({ cert: c.cert, key: c.key });
  const sock = dgram.createSocket('udp4');
  try {
    const port = listener.address().port;
    const shortHeader = Buffer.concat([Buffer.from([0x41]), randomBytes(CID_LEN + 30)]);
    const longGarbage = Buffer.concat([Buffer.from([0xc0]), randomBytes(40)]);
    const tinyInitial = Buffer.from([0xc0, 0, 0, 0, 1, 8, ...randomBytes(8), 0, 0, 0]);
    for (const d of [shortHeader, longGarbage, tinyInitial, Buffer.from([0])]) {
      await new Promise<void>((r) => sock.send(d, port, '127.0.0.1', () => r()));
    }
    await waitFor(() => listener.stats().datagramsIn === 4, 2000, '4 datagrams');
    expect(listener.stats()).toMatchObject({ connections: 0, datagramsDropped: 4, datagramsOut: 0 });
  } finally {
    sock.close();
    await listener.close();
  }
});

test('closed routes repeat a CLOSE after the 1st, 2nd, 4th, 8th packet, then expire, and stay bounded', () => {
  const closed = new ClosedRoutes();
  const to = { host: '127.0.0.1', port: 9, family: 4 as const, w0: 0x7f000001, w1: 0, w2: 0, w3: 0 };
  const packet = Buffer.from('close');
  closed.add(7, packet, to, 0);
  const answered = Array.from({ length: 16 }, (_, i) => closed.echoFor(7, 10) !== null ? i + 1 : 0).filter((n) => n > 0);
  expect(answered).toEqual([1, 2, 4, 8, 16]);
  expect(closed.echoFor(8, 10)).toBeNull(); // unknown key
  expect(closed.echoFor(7, CLOSED_ROUTE_MS + 1)).toBeNull(); // expired, and forgotten
  expect(closed.has(7)).toBe(false);
  for (let k = 0; k < MAX_CLOSED_ROUTES + 5; k++) closed.add(k, packet, to, 0);
  expect(closed.size).toBe(MAX_CLOSED_ROUTES);
  expect(closed.has(0)).toBe(false); // the oldest went first
  closed.expire(CLOSED_ROUTE_MS + 1);
  expect(closed.size).toBe(0);
});
