import net from 'node:net';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { readInto, SocketInput } from './socket-input.js';

/** A loopback pair: `accepted` is the server side, as a net.Server hands it out. */
async function pair(): Promise<{ client: net.Socket; accepted: net.Socket; server: net.Server }> {
  const server = net.createServer({ allowHalfOpen: true });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as net.AddressInfo).port;
  const accepting = once(server, 'connection') as Promise<[net.Socket]>;
  const client = net.connect({ host: '127.0.0.1', port });
  const [accepted] = await accepting;
  return { client, accepted, server };
}

const open: { client: net.Socket; accepted: net.Socket; server: net.Server }[] = [];
afterEach(() => {
  for (const p of open.splice(0)) {
    p.client.destroy();
    p.accepted.destroy();
    p.server.close();
  }
});

/** Resolves once `n` bytes reached the consumer. */
function collect(input: { chunks: Buffer[] }, n: number): Promise<Buffer> {
  return new Promise((resolve) => {
    const check = (): void => {
      const all = Buffer.concat(input.chunks);
      if (all.length >= n) resolve(all);
      else setTimeout(check, 5);
    };
    check();
  });
}

describe('readInto (an accepted socket read like net.connect({ onread }))', () => {
  it('delivers the bytes to the consumer, not as data events, and still reports the end', async () => {
    const p = await pair();
    open.push(p);
    const got = { chunks: [] as Buffer[] };
    const input = new SocketInput((chunk) => got.chunks.push(Buffer.from(chunk)));
    expect(readInto(p.accepted, input)).toBe(true);
    let dataEvents = 0;
    p.accepted.on('data', () => dataEvents++);
    p.accepted.resume();
    const ended = once(p.accepted, 'end');
    p.client.write('hello ');
    p.client.end('world');
    expect((await collect(got, 11)).toString()).toBe('hello world');
    await ended;
    expect(dataEvents).toBe(0);
  });

  it('pause() stops the reads and resume() restarts them', async () => {
    const p = await pair();
    open.push(p);
    const got = { chunks: [] as Buffer[] };
    expect(readInto(p.accepted, new SocketInput((chunk) => got.chunks.push(Buffer.from(chunk))))).toBe(true);
    p.accepted.resume();
    p.client.write('a');
    await collect(got, 1);
    p.accepted.pause();
    p.client.write('b');
    await new Promise((r) => setTimeout(r, 50));
    expect(Buffer.concat(got.chunks).toString()).toBe('a');
    p.accepted.resume();
    expect((await collect(got, 2)).toString()).toBe('ab');
  });

  it('a retained buffer is not overwritten by the next read', async () => {
    const p = await pair();
    open.push(p);
    const views: Buffer[] = [];
    const input: SocketInput = new SocketInput((chunk) => {
      views.push(chunk); // a view of the read buffer, kept
      input.retain();
    });
    expect(readInto(p.accepted, input)).toBe(true);
    p.accepted.resume();
    p.client.write('first');
    await new Promise<void>((resolve) => {
      const check = (): void => (views.length > 0 ? resolve() : void setTimeout(check, 5));
      check();
    });
    p.client.write('SECOND');
    await new Promise<void>((resolve) => {
      const check = (): void => (views.length > 1 ? resolve() : void setTimeout(check, 5));
      check();
    });
    expect(views.map(String)).toEqual(['first', 'SECOND']);
  });

  it('refuses a socket that already reads data events (the caller keeps those)', async () => {
    const p = await pair();
    open.push(p);
    p.accepted.on('data', () => undefined);
    expect(readInto(p.accepted, new SocketInput(() => undefined))).toBe(false);
  });
});
