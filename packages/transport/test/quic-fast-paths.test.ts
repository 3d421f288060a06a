// The QUIC stream's paths around Node's stream layers (src/quic/stream.ts), as a pooler uses them:
// `readInto` (quiche copies into the caller's buffers; no 'data' events) and `writeChunk` (straight
// to quiche when nothing waits); and the connection's read order (src/quic/recent-streams.ts): a
// request on one of many idle streams is found with a few questions to quiche, not one per stream.
import { once } from 'node:events';
import { afterEach, describe, expect, test } from 'vitest';
import type { ReadInto, SessionStream } from '../src/session-stream.js';
import { QuicDialer, QuicListener } from '../src/quic/index.js';
import type { QuicConnection, QuicSessionStream } from '../src/quic/index.js';
import { randomBytes, readAll } from './helpers.js';
import { devCerts, waitFor } from './quic-helpers.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(): Promise<{ dialer: QuicDialer; accepted: () => Promise<QuicSessionStream> }> {
  const c = await devCerts();
  const listener = await QuicListener.listen({ cert: c.cert, key: c.key });
  const queue: QuicSessionStream[] = [];
  const waiting: Array<(s: QuicSessionStream) => void> = [];
  listener.onSession((s) => {
    s.on('error', () => undefined);
    const w = waiting.shift();
    if (w !== undefined) w(s as QuicSessionStream);
    else queue.push(s as QuicSessionStream);
  });
  const dialer = new QuicDialer({ host: '127.0.0.1', port: listener.address().port, serverName: 'localhost', ca: c.ca });
  cleanups.push(() => listener.close({ graceful: false }));
  cleanups.push(() => dialer.close({ graceful: false }));
  const accepted = (): Promise<QuicSessionStream> => {
    const s = queue.shift();
    return s !== undefined ? Promise.resolve(s) : new Promise((resolve) => waiting.push(resolve));
  };
  return { dialer, accepted };
}

/** A ReadInto that keeps what it was given, in small fresh buffers as the pooler's client reads. */
function reader(size = 512): { target: ReadInto; bytes: () => Buffer; calls: () => number } {
  const parts: Buffer[] = [];
  return {
    target: {
      buffer: () => Buffer.alloc(size),
      callback: (n, buf) => {
        parts.push(Buffer.from(buf.subarray(0, n)));
        return true;
      },
    },
    bytes: () => Buffer.concat(parts),
    calls: () => parts.length,
  };
}

async function openWith(dialer: QuicDialer, first: string): Promise<SessionStream> {
  const s = await dialer.open();
  s.on('error', () => undefined);
  s.write(first);
  return s;
}

describe('readInto on QUIC streams', () => {
  test('gets the bytes read before it first, then every byte in order, then the end', async () => {
    const { dialer, accepted } = await setup();
    const client = await openWith(dialer, 'first bytes;');
    const server = await accepted();
    expect(server.readableLength).toBeGreaterThan(0); // read before the stream was handed out
    const r = reader();
    expect(server.readInto(r.target)).toBe(true);
    const ended = once(server, 'end');
    const body = randomBytes(300_000, 7);
    client.end(body);
    await ended;
    expect(r.bytes().equals(Buffer.concat([Buffer.from('first bytes;'), body]))).toBe(true);
    expect(r.calls()).toBeGreaterThan(1);
  });

  test('is refused with a data listener, and offered once', async () => {
    const { dialer, accepted } = await setup();
    await openWith(dialer, 'x');
    const server = await accepted();
    server.on('data', () => undefined);
    expect(server.readInto(reader().target)).toBe(false);
    await openWith(dialer, 'y');
    const other = await accepted();
    expect(other.readInto(reader().target)).toBe(true);
    expect(other.readInto(reader().target)).toBe(false);
  });

  test('pause() holds what arrives until resume(); nothing is lost', async () => {
    const { dialer, accepted } = await setup();
    const client = await openWith(dialer, 'a');
    const server = await accepted();
    const r = reader();
    server.readInto(r.target);
    await waitFor(() => r.bytes().toString() === 'a', 5000, 'first byte');
    server.pause();
    client.write('b');
    // A round trip on another stream of the same connection: the paused stream's byte has arrived by then.
    const echo = await openWith(dialer, 'ping');
    const echoServer = await accepted();
    echoServer.pipe(echoServer);
    echo.end();
    expect((await readAll(echo)).toString()).toBe('ping');
    expect(r.bytes().toString()).toBe('a');
    server.resume();
    await waitFor(() => r.bytes().toString() === 'ab', 5000, 'byte held while paused');
  });
});

describe('writeChunk on QUIC streams', () => {
  test('delivers every byte in order, mixed with write(), small and large chunks', async () => {
    const { dialer, accepted } = await setup();
    const client = await openWith(dialer, '.');
    const server = await accepted();
    const got = readAll(client);
    const sent: Buffer[] = [];
    for (let i = 0; i < 200; i++) {
      const chunk = randomBytes(1 + ((i * 7919) % (i % 10 === 0 ? 200_000 : 2_000)), i);
      sent.push(chunk);
      if (i % 3 === 0) server.write(chunk);
      else server.writeChunk(chunk);
    }
    server.end();
    expect((await got).equals(Buffer.concat(sent))).toBe(true);
  });

  test('answers false once quiche holds back, and drains when the peer reads', async () => {
    const { dialer, accepted } = await setup();
    const client = await openWith(dialer, '.');
    const server = await accepted();
    client.pause();
    const big = randomBytes(1 << 20, 3);
    let answer = true;
    let writes = 0;
    while (answer && writes < 64) {
      answer = server.writeChunk(big);
      writes++;
    }
    expect(answer).toBe(false);
    expect(server.holdsWrittenBytes()).toBe(true);
    const drained = once(server, 'drain');
    const got = readAll(client);
    client.resume();
    await drained;
    server.end();
    expect((await got).length).toBe(writes * big.length);
  });

  test('after end(), goes through write(), which refuses it: the peer gets nothing after the end', async () => {
    const { dialer, accepted } = await setup();
    const client = await openWith(dialer, '.');
    const server = await accepted();
    const parts: Buffer[] = [];
    client.on('data', (c: Buffer) => parts.push(c));
    // The peer sees the end, or the reset of the failed write's destroy (as write() would cause).
    const peerDone = new Promise((resolve) => {
      client.once('end', resolve);
      client.once('error', resolve);
    });
    server.writeChunk(Buffer.from('before'));
    server.end();
    const refused = new Promise<void>((resolve) => server.on('error', (e: NodeJS.ErrnoException) => e.code === 'ERR_STREAM_WRITE_AFTER_END' && resolve()));
    expect(server.writeChunk(Buffer.from('after'))).toBe(false);
    await refused;
    await peerDone;
    expect(Buffer.concat(parts).toString()).not.toContain('after');
  });
});

describe('the read order of a connection with many idle streams', () => {
  test('a request on the stream read last costs a couple of questions to quiche, not one per stream', async () => {
    const { dialer, accepted } = await setup();
    const clients: SessionStream[] = [];
    const servers: QuicSessionStream[] = [];
    for (let i = 0; i < 40; i++) {
      clients.push(await openWith(dialer, `open ${i};`));
      const s = await accepted();
      s.on('data', () => undefined);
      servers.push(s);
    }
    const conn = (servers[0] as unknown as { host: QuicConnection }).host;
    const q = conn.q;
    const original = q.streamReadable.bind(q);
    let questions = 0;
    q.streamReadable = (id: number): boolean => {
      questions++;
      return original(id);
    };
    const request = async (i: number, text: string): Promise<number> => {
      const got = once(servers[i]!, 'data');
      const before = questions;
      clients[i]!.write(text);
      expect((await got)[0].toString()).toBe(text);
      return questions - before;
    };
    try {
      // As a LIFO pool would: the next request goes on the session whose stream was read last.
      for (const i of [17, 3, 39, 0]) {
        await request(i, `first ${i}`);
        expect(await request(i, `again ${i}`)).toBeLessThanOrEqual(2);
      }
    } finally {
      q.streamReadable = original;
    }
  });
});
