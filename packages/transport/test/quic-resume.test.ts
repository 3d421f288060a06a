// 0-RTT resumption (early data marked on the server, stale tickets falling back without losing
// data) and connection migration when the client's UDP socket is rebound to a new port.
import { randomBytes } from 'node:crypto';
import { afterEach, expect, test } from 'vitest';
import type { SessionStream } from '../src/session-stream.js';
import { QuicDialer, QuicListener, QuicTicketStore } from '../src/quic/index.js';
import type { QuicSessionStream } from '../src/quic/index.js';
import type { QuicServerOptions } from '../src/quic/index.js';
import { devCerts, readAll, readN, waitFor } from './quic-helpers.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Seen {
  earlyData: boolean;
  request: string;
  /** Whether the handshake was already confirmed when the session was handed to the server. */
  confirmedAtAccept?: boolean;
}

async function echoServer(opts: Partial<QuicServerOptions>, seen: Seen[]): Promise<QuicListener> {
  const c = await devCerts();
  const listener = await QuicListener.listen({ cert: c.cert, key: c.key, ...opts });
  listener.onSession((s: SessionStream) => {
    s.on('error', () => {});
    const earlyData = s.info.quic?.earlyData ?? false;
    const confirmedAtAccept = (s as QuicSessionStream).isHandshakeConfirmed;
    void readAll(s).then((req) => {
      seen.push({ earlyData, request: req.toString(), confirmedAtAccept });
      s.end(`echo:${req.toString()}`);
    });
  });
  cleanups.push(() => listener.close({ graceful: false }));
  return listener;
}

async function dialer(port: number, tickets: QuicTicketStore): Promise<QuicDialer> {
  const c = await devCerts();
  const d = new QuicDialer({ host: '127.0.0.1', port, serverName: 'localhost', ca: c.ca, tickets });
  cleanups.push(() => d.close({ graceful: false }));
  return d;
}

async function ask(d: QuicDialer, text: string): Promise<string> {
  const s = await d.open();
  s.on('error', () => {});
  const res = readAll(s);
  s.end(text);
  return (await res).toString();
}

test('a resumed connection sends 0-RTT data that the server marks as early data', async () => {
  const ticketKey = randomBytes(48);
  const seen: Seen[] = [];
  const listener = await echoServer({ ticketKey }, seen);
  const port = listener.address().port;
  const tickets = new QuicTicketStore();

  const first = await dialer(port, tickets);
  expect(await ask(first, 'full handshake')).toBe('echo:full handshake');
  await waitFor(() => tickets.size === 1, 2000, 'a session ticket');
  await first.close();

  const second = await dialer(port, tickets);
  const s = await second.open();
  // The stream exists before the handshake finished: its bytes travel as 0-RTT data.
  expect(s.info.quic?.earlyData).toBe(true);
  const res = readAll(s);
  s.end('zero rtt');
  expect((await res).toString()).toBe('echo:zero rtt');
  expect(seen).toEqual([
    { earlyData: false, request: 'full handshake', confirmedAtAccept: true },
    // Handed out before the client's Finished arrived: the pooler must treat it as replayable.
    { earlyData: true, request: 'zero rtt', confirmedAtAccept: false },
  ]);
  const [conn] = (await second.endpoint()).connections;
  expect(conn?.isResumed).toBe(true);
  // Streams opened after the handshake are ordinary 1-RTT streams again.
  expect(await ask(second, 'later')).toBe('echo:later');
  expect(seen[2]).toEqual({ earlyData: false, request: 'later', confirmedAtAccept: true });
});

test("earlyData: 'defer' withholds 0-RTT streams until the handshake is confirmed", async () => {
  const seen: Seen[] = [];
  const listener = await echoServer({ ticketKey: randomBytes(48), earlyData: 'defer' }, seen);
  const tickets = new QuicTicketStore();
  const first = await dialer(listener.address().port, tickets);
  await ask(first, 'one');
  await waitFor(() => tickets.size === 1, 2000, 'a session ticket');
  const second = await dialer(listener.address().port, tickets);
  const s = await second.open();
  expect(s.info.quic?.earlyData).toBe(true); // the client did send it as 0-RTT
  const res = readAll(s);
  s.end('two');
  expect((await res).toString()).toBe('echo:two');
  const [conn] = (await second.endpoint()).connections;
  expect(conn?.isResumed).toBe(true);
  // ...but the server handed the session out only once the handshake was confirmed.
  expect(seen.map((x) => [x.earlyData, x.confirmedAtAccept])).toEqual([[false, true], [false, true]]);
});

test('a stale ticket (server restarted with another ticket key) falls back without losing data', async () => {
  const seen: Seen[] = [];
  const before = await echoServer({ ticketKey: randomBytes(48) }, seen);
  const port = before.address().port;
  const tickets = new QuicTicketStore();
  const first = await dialer(port, tickets);
  await ask(first, 'warm');
  await waitFor(() => tickets.size === 1, 2000, 'a session ticket');
  await first.close();
  await before.close({ graceful: false });

  // Same address, new ticket key: the old ticket cannot be decrypted, 0-RTT is rejected.
  await echoServer({ port, ticketKey: randomBytes(48) }, seen);
  const second = await dialer(port, tickets);
  const payload = randomBytes(30_000).toString('hex');
  const answers = await Promise.all([ask(second, payload), ask(second, 'small')]);
  expect(answers).toEqual([`echo:${payload}`, 'echo:small']);
  expect(seen.slice(1).every((x) => !x.earlyData)).toBe(true);
  expect(seen.slice(1).map((x) => x.request).sort()).toEqual([payload, 'small'].sort());
});

test('the connection survives the client rebinding its UDP socket (migration)', async () => {
  const c = await devCerts();
  const listener = await QuicListener.listen({ cert: c.cert, key: c.key });
  cleanups.push(() => listener.close({ graceful: false }));
  const remotePorts: number[] = [];
  listener.onSession((s) => {
    s.on('error', () => {});
    remotePorts.push(s.info.remotePort);
    s.pipe(s);
  });
  const d = await dialer(listener.address().port, new QuicTicketStore());
  const ep = await d.endpoint();
  const s = await d.open();
  s.on('error', () => {});
  s.write('before ');
  expect((await readN(s, 7)).toString()).toBe('before ');
  const oldPort = ep.socketPort();

  await ep.rebind();
  expect(ep.socketPort()).not.toBe(oldPort);
  s.write('after');
  expect((await readN(s, 5)).toString()).toBe('after');
  // A new stream on the same connection also works over the new path.
  const s2 = await d.open();
  s2.on('error', () => {});
  s2.write('new stream');
  expect((await readN(s2, 10)).toString()).toBe('new stream');
  expect(remotePorts).toEqual([oldPort, ep.socketPort()]);
  expect(listener.stats().connections).toBe(1);
  expect((await d.stats()).handshakes).toBe(1);
  s.end();
  s2.end();
});
