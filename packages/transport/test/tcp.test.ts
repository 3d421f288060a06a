import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionListener, SessionStream } from '../src/index.js';
import { TransportError, createTcpDialer, dialTcp, listenTcp } from '../src/index.js';
import { directWriteAvailable } from '../src/tcp/direct-write.js';
import { describeSessionStreamContract } from './contract.js';
import { acceptedPairs, closed, nextError } from './helpers.js';

let listener: SessionListener;
let accepted: (client: SessionStream) => Promise<SessionStream>;

beforeAll(async () => {
  listener = await listenTcp({ port: 0 });
  accepted = acceptedPairs(listener);
});
afterAll(() => listener.close());

describeSessionStreamContract('tcp', () => ({ connect: pair }));

describe('tcp transport', () => {
  it('listens on port 0 and reports real addresses', async () => {
    const { address, port } = listener.address();
    expect(address).toBe('127.0.0.1');
    expect(port).toBeGreaterThan(0);
    const client = await dialTcp({ host: '127.0.0.1', port });
    const server = await accepted(client);
    expect(client.info.remotePort).toBe(port);
    expect(server.info.remotePort).toBe(client.info.localPort);
    expect(server.info.tls).toBeNull();
    expect(client instanceof net.Socket).toBe(true); // no extra stream layer on the hot path
    client.destroy();
    server.destroy();
    await Promise.all([closed(client), closed(server)]);
  });

  it('refuses with ECONNREFUSED when nothing listens', async () => {
    const spare = await listenTcp({ port: 0 });
    const port = spare.address().port;
    await spare.close();
    const error = await dialTcp({ host: '127.0.0.1', port }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransportError);
    expect((error as TransportError).code).toBe('ECONNREFUSED');
  });

  it('losing the server (listener closed) resets every open session', async () => {
    const own = await listenTcp({ port: 0 });
    const sessions: SessionStream[] = [];
    own.onSession((stream) => sessions.push(stream));
    const dialer = createTcpDialer({ host: '127.0.0.1', port: own.address().port });
    const clients = await Promise.all([dialer.open(), dialer.open(), dialer.open()]);
    while (sessions.length < 3) await new Promise((r) => setTimeout(r, 5));
    const errors = clients.map((client) => {
      client.resume();
      return nextError(client);
    });
    await own.close();
    for (const error of await Promise.all(errors)) expect(error?.code).toBe('ECONNRESET');
    await dialer.close();
  });

  it('graceful close waits for sessions to finish', async () => {
    const own = await listenTcp({ port: 0 });
    own.onSession((stream) => {
      stream.resume();
      stream.on('end', () => stream.end('bye'));
    });
    const client = await dialTcp({ host: '127.0.0.1', port: own.address().port });
    await new Promise((r) => setTimeout(r, 10));
    let done = false;
    const closing = own.close({ graceful: true }).then(() => (done = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(done).toBe(false);
    client.end();
    client.resume();
    await once(client, 'end');
    await closing;
    expect(done).toBe(true);
  });

  it('dialer close aborts the streams it opened', async () => {
    const dialer = createTcpDialer({ host: '127.0.0.1', port: listener.address().port });
    const client = await dialer.open();
    const server = await accepted(client);
    server.resume();
    const serverError = nextError(server);
    await dialer.close();
    expect((await serverError)?.code).toBe('ECONNRESET');
    await expect(dialer.open()).rejects.toMatchObject({ code: 'ECONNABORTED' });
  });
});

// writeChunk on plain TCP sockets (src/tcp/direct-write.ts): bytes go to the libuv handle directly
// when nothing is queued, and exactly as write() would have sent them otherwise: same order, same
// backpressure answer, 'drain' once queued bytes are written, errors reported on the socket.
/** A dialed session and the server's side of it. */
async function pair(): Promise<[SessionStream, SessionStream]> {
  const client = await dialTcp({ host: '127.0.0.1', port: listener.address().port });
  return [client, await accepted(client)];
}

function collect(s: SessionStream): { bytes: () => Buffer } {
  const chunks: Buffer[] = [];
  s.on('data', (c: Buffer) => chunks.push(c));
  return { bytes: () => Buffer.concat(chunks) };
}

describe('writeChunk on plain TCP sockets', () => {
  it('is offered on TCP session streams and uses the handle here', async () => {
    const [client, server] = await pair();
    expect(typeof client.writeChunk).toBe('function');
    expect(typeof server.writeChunk).toBe('function');
    expect(directWriteAvailable).toBe(process.env['QUICPOOL_TCP_DIRECT_WRITE'] !== '0');
    client.destroy();
    server.destroy();
  });

  it('delivers every byte in order, mixed with write(), small and large chunks', async () => {
    const [client, server] = await pair();
    const got = collect(server);
    const sent: Buffer[] = [];
    for (let i = 0; i < 400; i++) {
      const chunk = randomBytes(1 + ((i * 7919) % (i % 10 === 0 ? 300_000 : 2_000)));
      sent.push(chunk);
      if (i % 3 === 0) client.write(chunk);
      else client.writeChunk!(chunk);
    }
    client.end();
    await once(server, 'end');
    expect(got.bytes().equals(Buffer.concat(sent))).toBe(true);
    server.destroy();
  });

  it('answers false while bytes wait in libuv, holds them, and emits drain once they are written', async () => {
    const [client, server] = await pair();
    server.pause(); // the peer stops reading: the kernel buffers fill, libuv queues
    const big = randomBytes(1 << 20);
    let answer = true;
    let writes = 0;
    while (answer && writes < 256) {
      answer = client.writeChunk!(big);
      writes++;
    }
    expect(answer).toBe(false);
    expect(client.holdsWrittenBytes()).toBe(true);
    const drained = once(client, 'drain');
    const got = collect(server);
    server.resume();
    await drained;
    expect(client.holdsWrittenBytes()).toBe(false);
    client.end();
    await once(server, 'end');
    expect(got.bytes().length).toBe(writes * big.length);
    server.destroy();
  });

  it('reports a failed write as an error on the socket, and afterwards answers as write() does', async () => {
    const [client, server] = await pair();
    server.destroy();
    await once(client, 'end').catch(() => undefined);
    const failed = once(client, 'error');
    // The first writes after the peer's close may still be accepted by the kernel; a reset follows.
    for (let i = 0; i < 64 && !client.destroyed; i++) {
      client.writeChunk!(randomBytes(64 * 1024));
      await new Promise((r) => setTimeout(r, 5));
    }
    const [error] = (await failed) as [NodeJS.ErrnoException];
    expect(error.code).toMatch(/^(EPIPE|ECONNRESET)$/);
    expect(client.destroyed).toBe(true);
    // As write() after destroy: refused without a throw.
    expect(client.writeChunk!(Buffer.from('x'))).toBe(client.write(Buffer.from('x')));
  });

  it('after end(), goes through write(), which refuses it: the peer gets nothing after the end', async () => {
    const [client, server] = await pair();
    const got = collect(server);
    // The peer sees the end, or the reset of the client's destroy: either way nothing more comes.
    const peerDone = new Promise((resolve) => {
      server.once('end', resolve);
      server.once('error', resolve);
    });
    client.writeChunk!(Buffer.from('before'));
    client.end();
    // Write-after-end is among the errors (the transport's reset on destroy is another).
    const refused = new Promise<void>((resolve) => {
      client.on('error', (e: NodeJS.ErrnoException) => {
        if (e.code === 'ERR_STREAM_WRITE_AFTER_END') resolve();
      });
    });
    expect(client.writeChunk!(Buffer.from('after'))).toBe(false);
    await refused;
    await peerDone;
    expect(got.bytes().toString()).toBe('before');
    server.destroy();
  });
});

describe('writeChunk on several sockets at once', () => {
  it('keeps a queued write of one socket apart from the immediate writes of another', async () => {
    const [a, aPeer] = await pair();
    const [b, bPeer] = await pair();
    aPeer.pause(); // a's writes end up queued in libuv, each bound to its own request
    const big = randomBytes(1 << 20);
    let writes = 0;
    while (a.writeChunk!(big) && writes < 256) writes++;
    writes++;
    const gotB = collect(bPeer);
    const sentB: Buffer[] = [];
    for (let i = 0; i < 200; i++) {
      const chunk = randomBytes(1 + (i % 97));
      sentB.push(chunk);
      expect(b.writeChunk!(chunk)).toBe(true);
    }
    b.end();
    await once(bPeer, 'end');
    expect(gotB.bytes().equals(Buffer.concat(sentB))).toBe(true);
    const drained = once(a, 'drain');
    const gotA = collect(aPeer);
    aPeer.resume();
    await drained;
    a.end();
    await once(aPeer, 'end');
    expect(gotA.bytes().length).toBe(writes * big.length);
    for (const s of [a, aPeer, b, bPeer]) s.destroy();
  });
});

// readInto on plain TCP sockets (src/tcp/read-into.ts): an accepted socket reads into the
// caller's buffers as a socket dialed with Node's `onread` does, and keeps its 'end', pause() and
// resume() behaviour.
describe('readInto on plain TCP sockets', () => {
  const enabled = process.env['QUICPOOL_TCP_READ_INTO'] !== '0';

  /** Reads into fresh 100-byte buffers (so large writes take many reads); collects the bytes. */
  function reader(): { target: { buffer(): Uint8Array; callback(n: number, b: Uint8Array): boolean }; bytes: () => Buffer; reads: () => number } {
    const chunks: Buffer[] = [];
    return {
      target: {
        buffer: () => Buffer.alloc(100),
        callback: (n, b) => {
          chunks.push(Buffer.from(b.subarray(0, n)));
          return true;
        },
      },
      bytes: () => Buffer.concat(chunks),
      reads: () => chunks.length,
    };
  }

  it('delivers every byte to the callback, emits no data, and ends on FIN', async () => {
    const [client, server] = await pair();
    const r = reader();
    expect(server.readInto!(r.target)).toBe(enabled);
    if (!enabled) return void (client.destroy(), server.destroy());
    let dataEvents = 0;
    server.on('data', () => dataEvents++); // added after the switch: it never fires
    const sent = randomBytes(250_000);
    client.end(sent);
    await once(server, 'end');
    expect(r.bytes().equals(sent)).toBe(true);
    expect(r.reads()).toBeGreaterThanOrEqual(2_500);
    expect(dataEvents).toBe(0);
    server.end();
    await Promise.all([closed(client), closed(server)]);
  });

  it('stops reading while paused and goes on after resume', async () => {
    const [client, server] = await pair();
    const r = reader();
    expect(server.readInto!(r.target)).toBe(enabled);
    if (!enabled) return void (client.destroy(), server.destroy());
    client.write(Buffer.from('first'));
    while (r.bytes().length < 5) await new Promise((resolve) => setImmediate(resolve));
    server.pause();
    expect((server as unknown as { _handle: { reading: boolean } })._handle.reading).toBe(false);
    const more = randomBytes(16_000_000);
    expect(client.write(more)).toBe(false); // more than the kernel buffers take
    // Loop turns in which a reading socket would have read: nothing arrives while paused.
    for (let i = 0; i < 50; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(r.bytes().length).toBe(5);
    server.resume();
    await once(client, 'drain');
    client.end();
    await once(server, 'end');
    expect(r.bytes().equals(Buffer.concat([Buffer.from('first'), more]))).toBe(true);
    server.destroy();
  });

  it('refuses, changing nothing, when bytes are already buffered or a data listener is set', async () => {
    const [client, server] = await pair();
    server.pause();
    client.write(Buffer.from('early'));
    await once(server, 'readable');
    expect(server.readableLength).toBe(5);
    expect(server.readInto!(reader().target)).toBe(false);
    const got = collect(server);
    server.resume();
    client.end();
    await once(server, 'end');
    expect(got.bytes().toString()).toBe('early');

    const [client2, server2] = await pair();
    const got2 = collect(server2);
    expect(server2.readInto!(reader().target)).toBe(false);
    client2.end('still data events');
    await once(server2, 'end');
    expect(got2.bytes().toString()).toBe('still data events');
    server.destroy();
    server2.destroy();
  });
});
