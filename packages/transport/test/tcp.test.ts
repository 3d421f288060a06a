import { once } from 'node:events';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionListener, SessionStream } from '../src/index.js';
import { TransportError, createTcpDialer, dialTcp, listenTcp } from '../src/index.js';
import { describeSessionStreamContract } from './contract.js';
import { acceptedPairs, closed, nextError } from './helpers.js';

let listener: SessionListener;
let accepted: (client: SessionStream) => Promise<SessionStream>;

beforeAll(async () => {
  listener = await listenTcp({ port: 0 });
  accepted = acceptedPairs(listener);
});
afterAll(() => listener.close());

describeSessionStreamContract('tcp', () => ({
  async connect() {
    const client = await dialTcp({ host: '127.0.0.1', port: listener.address().port });
    return [client, await accepted(client)];
  },
}));

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
