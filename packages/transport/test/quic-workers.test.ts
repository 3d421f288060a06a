// Several QUIC endpoints sharing one UDP port, as the workers of a multi-worker pooler do: a
// reuseport group made by @quicpool/udp, steered by the connection-id program. Connections and
// their sessions stay on the worker that accepted them (also after a rebind and a CID rotation),
// 0-RTT tickets and Retry tokens issued by one worker are accepted by another, and a connection
// whose state is gone is ended at once by a stateless reset.
import { createHmac, randomBytes } from 'node:crypto';
import dgram from 'node:dgram';
import fc from 'fast-check';
import { afterEach, describe, expect, test } from 'vitest';
import { BatchedUdpSocket, reuseportGroup } from '@quicpool/udp';
import type { SocketGroup } from '@quicpool/udp';
import { newCid } from '../src/quic/routing/cid.js';
import { QuicDialer, QuicListener, QuicTicketStore, quicSteeringProgram, steeredWorker } from '../src/quic/index.js';
import type { QuicServerOptions, QuicSessionStream } from '../src/quic/index.js';
import { devCerts, errorOf, readN, waitFor } from './quic-helpers.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Workers {
  readonly port: number;
  readonly listeners: QuicListener[];
  /** Sessions each worker accepted, with whether their first bytes were early data. */
  readonly sessions: { earlyData: boolean }[][];
}

/** `count` echo servers on one port, worker i on member i (or on `crossed` ones, see the Retry test). */
async function startWorkers(count: number, shared: Partial<QuicServerOptions>, perWorker: (i: number) => Partial<QuicServerOptions> = () => ({})): Promise<Workers> {
  const c = await devCerts();
  const group: SocketGroup = reuseportGroup({ protocol: 'udp', host: '127.0.0.1', port: 0, count, program: quicSteeringProgram(count) });
  cleanups.push(() => group.close());
  expect(group.steering).toEqual({ kind: 'bpf' });
  const sessions: { earlyData: boolean }[][] = [];
  const listeners: QuicListener[] = [];
  for (let i = 0; i < count; i++) {
    const mine: { earlyData: boolean }[] = [];
    sessions.push(mine);
    const l = await QuicListener.listen({ cert: c.cert, key: c.key, socketFd: group.fds[i]!, worker: { index: i, count }, ...shared, ...perWorker(i) });
    cleanups.push(() => l.close({ graceful: false }));
    l.onSession((s) => {
      s.on('error', () => undefined);
      mine.push({ earlyData: s.info.quic?.earlyData ?? false });
      s.pipe(s);
    });
    listeners.push(l);
  }
  return { port: group.port, listeners, sessions };
}

async function dialer(port: number, extra: { tickets?: QuicTicketStore; idleTimeoutMs?: number } = {}): Promise<QuicDialer> {
  const c = await devCerts();
  const d = new QuicDialer({ host: '127.0.0.1', port, serverName: 'localhost', ca: c.ca, tickets: extra.tickets ?? new QuicTicketStore(), ...(extra.idleTimeoutMs !== undefined ? { idleTimeoutMs: extra.idleTimeoutMs } : {}) });
  cleanups.push(() => d.close({ graceful: false }));
  return d;
}

async function echo(s: QuicSessionStream, text: string): Promise<string> {
  s.write(text);
  return (await readN(s, Buffer.byteLength(text))).toString();
}

const shared = (): Partial<QuicServerOptions> => ({ ticketKey: randomBytes(48), retryKey: randomBytes(32), statelessResetKey: randomBytes(32) });

describe('QUIC workers on one port', () => {
  test('the steering program and the model agree, and every CID a worker issues steers to it', async () => {
    for (const count of [1, 2, 3, 8, 16]) {
      fc.assert(
        fc.property(fc.integer({ min: 0, max: count - 1 }), fc.boolean(), (index, long) => {
          const { cid } = newCid(new Set(), { index, count });
          const packet = long ? Buffer.concat([Buffer.from([0xc0, 0, 0, 0, 1, cid.length]), cid, Buffer.alloc(20)]) : Buffer.concat([Buffer.from([0x40]), cid, Buffer.alloc(20)]);
          return steeredWorker(packet, count) === index;
        }),
      );
    }
    // The kernel runs the program itself: random datagrams land where the model says.
    const group = reuseportGroup({ protocol: 'udp', host: '127.0.0.1', port: 0, count: 3, program: quicSteeringProgram(3) });
    cleanups.push(() => group.close());
    const got: Buffer[][] = [[], [], []];
    group.fds.forEach((fd, i) => {
      const b = BatchedUdpSocket.open({ address: '127.0.0.1', fd, gro: false, onDatagrams: (sock, n) => { for (let k = 0; k < n; k++) got[i]!.push(Buffer.from(sock.rxView(k))); }, onError: () => undefined });
      cleanups.push(() => b.close());
    });
    const datagrams = fc.sample(fc.uint8Array({ minLength: 1, maxLength: 60 }), 150).map((a) => Buffer.from(a));
    const sender = dgram.createSocket('udp4');
    await Promise.all(datagrams.map((d) => new Promise<void>((r) => sender.send(d, group.port, '127.0.0.1', () => r()))));
    sender.close();
    await waitFor(() => got.flat().length === datagrams.length, 5000, 'every datagram');
    got.forEach((list, i) => {
      for (const d of list) expect(steeredWorker(d, 3)).toBe(i);
    });
  });

  test('200 sessions over 20 connections spread over 2 workers, each connection on one worker', async () => {
    const w = await startWorkers(2, shared());
    const dialers = await Promise.all(Array.from({ length: 20 }, () => dialer(w.port)));
    const answers = await Promise.all(
      dialers.flatMap((d, i) =>
        Array.from({ length: 10 }, async (_, j) => {
          const s = await d.open();
          s.on('error', () => undefined);
          const text = `connection ${i} session ${j}`;
          const got = await echo(s, text);
          s.end();
          return got === text;
        }),
      ),
    );
    expect(answers.filter(Boolean)).toHaveLength(200);
    const perWorker = w.listeners.map((l) => l.stats());
    expect(perWorker[0]!.connections + perWorker[1]!.connections).toBe(20);
    // 20 connections whose first DCIDs are random: both workers get some (all on one: 2^-19).
    expect(perWorker[0]!.connections).toBeGreaterThan(0);
    expect(perWorker[1]!.connections).toBeGreaterThan(0);
    expect(w.sessions[0]!.length + w.sessions[1]!.length).toBe(200);
    // Each connection's 10 sessions are on its worker: the counts are multiples of 10.
    expect(w.sessions[0]!.length).toBe(perWorker[0]!.connections * 10);
    // Nothing reached a worker that does not know its connection.
    for (const s of perWorker) {
      expect(s.datagramsDropped).toBe(0);
      expect(s.statelessResetsSent).toBe(0);
    }
  });

  test('a connection keeps its worker and its sessions across a rebind and a CID rotation', async () => {
    const w = await startWorkers(2, shared());
    const d = await dialer(w.port);
    const s = await d.open();
    s.on('error', () => undefined);
    expect(await echo(s, 'before')).toBe('before');
    const owner = w.listeners.findIndex((l) => l.stats().connections === 1);
    expect(owner).toBeGreaterThanOrEqual(0);

    const ep = await d.endpoint();
    const oldPort = ep.socketPort();
    await ep.rebind(); // NAT rebinding: a new source port, the same DCID
    expect(ep.socketPort()).not.toBe(oldPort);
    expect(await echo(s, 'after rebind')).toBe('after rebind');

    // CID rotation: the client retires the DCID of the handshake and moves to a spare one the worker issued.
    const [conn] = [...ep.connections];
    await waitFor(() => conn!.q.availableDcids() > 0, 5000, 'spare connection ids from the server');
    conn!.q.retireDestinationCid(0);
    expect(await echo(s, 'after rotation')).toBe('after rotation');
    const s2 = await d.open();
    s2.on('error', () => undefined);
    expect(await echo(s2, 'new session')).toBe('new session');
    expect(w.listeners[owner]!.stats().connections).toBe(1);
    expect(w.listeners[1 - owner]!.stats().connections).toBe(0);
    for (const l of w.listeners) expect(l.stats().datagramsDropped).toBe(0);
    expect((await d.stats()).handshakes).toBe(1);
    s.end();
    s2.end();
  });

  test('a 0-RTT ticket issued by one worker is accepted by the other', async () => {
    const w = await startWorkers(2, shared());
    const tickets = new QuicTicketStore();
    const first = await dialer(w.port, { tickets });
    const s0 = await first.open();
    s0.on('error', () => undefined);
    expect(await echo(s0, 'full handshake')).toBe('full handshake');
    await waitFor(() => tickets.size === 1, 2000, 'a session ticket');
    const issuer = w.listeners.findIndex((l) => l.stats().connections === 1);
    s0.end();
    await first.close({ graceful: false });
    // New connections choose random DCIDs: keep resuming until one lands on the other worker.
    const other = 1 - issuer;
    for (let attempt = 0; attempt < 40 && w.sessions[other]!.length === 0; attempt++) {
      const d = await dialer(w.port, { tickets });
      const s = await d.open();
      s.on('error', () => undefined);
      expect(s.info.quic?.earlyData).toBe(true); // sent as 0-RTT
      expect(await echo(s, 'resumed')).toBe('resumed');
      await d.close({ graceful: false });
    }
    expect(w.sessions[other]!.length).toBeGreaterThan(0);
    // The other worker took the 0-RTT data as early data: it decrypted the ticket with the shared key.
    expect(w.sessions[other]!.every((x) => x.earlyData)).toBe(true);
  });

  test('a Retry token minted by one worker is accepted by the other, and not under another key', async () => {
    // Crossed on purpose: member i runs as worker 1-i, so the CID its Retry hands out steers the
    // client's next Initial (the one with the token) to the other member.
    const keys = shared();
    const w = await startWorkers(2, { ...keys, retry: true }, (i) => ({ worker: { index: 1 - i, count: 2 } }));
    for (let i = 0; i < 6; i++) {
      const d = await dialer(w.port);
      const s = await d.open();
      s.on('error', () => undefined);
      expect(await echo(s, `retried ${i}`)).toBe(`retried ${i}`);
    }
    const [a, b] = w.listeners.map((l) => l.stats());
    expect(a!.retriesSent + b!.retriesSent).toBe(6);
    expect(a!.connections).toBe(b!.retriesSent);
    expect(b!.connections).toBe(a!.retriesSent);

    const split = await startWorkers(2, { ...shared(), retry: true }, (i) => ({ worker: { index: 1 - i, count: 2 }, retryKey: randomBytes(32) }));
    const d = await dialer(split.port, { idleTimeoutMs: 1500 });
    await expect(d.open()).rejects.toThrow();
    expect(split.listeners.every((l) => l.stats().connections === 0)).toBe(true);
  });

  test('a connection whose state is gone is reset at once, with the token of its CID', async () => {
    const key = randomBytes(32);
    const w = await startWorkers(1, { statelessResetKey: key });
    const d = await dialer(w.port, { idleTimeoutMs: 60_000 });
    const s = await d.open();
    expect(await echo(s, 'hello')).toBe('hello');
    // The worker loses the connection without a word (what a crash does).
    for (const c of [...w.listeners[0]!.endpoint.connections]) c.finalize();
    const failed = errorOf(s);
    s.write('anyone there?');
    // The client's next packet finds no connection: a stateless reset ends it long before its 60 s idle timeout.
    expect(await failed).toMatchObject({ code: 'ECONNRESET', message: expect.stringMatching(/stateless reset/) });
    expect(w.listeners[0]!.stats().statelessResetsSent).toBeGreaterThan(0);

    // The packet itself: short header form, smaller than its trigger, ending in HMAC(key, CID)[0..16].
    const cid = randomBytes(8);
    const reply = await new Promise<Buffer>((resolve) => {
      const u = dgram.createSocket('udp4');
      u.on('message', (m) => (u.close(), resolve(m)));
      u.send(Buffer.concat([Buffer.from([0x41]), cid, randomBytes(40)]), w.port, '127.0.0.1');
    });
    expect(reply.length).toBeGreaterThanOrEqual(21);
    expect(reply.length).toBeLessThan(49);
    expect(reply[0]! & 0xc0).toBe(0x40);
    expect(reply.subarray(reply.length - 16)).toEqual(createHmac('sha256', key).update(cid).digest().subarray(0, 16));
  });
});

test('a stateless reset is never larger than what triggered it', async () => {
  const w = await startWorkers(1, shared());
  const before = w.listeners[0]!.stats().statelessResetsSent;
  const u = dgram.createSocket('udp4');
  // 21 bytes: a reset must be at least 21 and smaller than the trigger, so none is sent.
  await new Promise<void>((r) => u.send(Buffer.concat([Buffer.from([0x40]), randomBytes(20)]), w.port, '127.0.0.1', () => r()));
  // A datagram the worker answers (so the one above was handled before it): the reset of a long one.
  const answered = new Promise<void>((r) => u.once('message', () => r()));
  await new Promise<void>((r) => u.send(Buffer.concat([Buffer.from([0x40]), randomBytes(60)]), w.port, '127.0.0.1', () => r()));
  await answered;
  u.close();
  expect(w.listeners[0]!.stats().statelessResetsSent - before).toBe(1);
});
