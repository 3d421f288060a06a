// The behaviour every session stream must share (session-stream.ts): run against TCP, TLS and
// the in-memory pair by the suites that import it, each supplying connected pairs.
import { afterEach, describe, expect, it } from 'vitest';
import type { SessionStream } from '../src/index.js';
import { closed, nextError, randomBytes, readAll, readBytes, writeChunked } from './helpers.js';

export interface PairSource {
  /** A connected [client, server] pair of session streams. */
  connect(): Promise<[SessionStream, SessionStream]>;
}

export function describeSessionStreamContract(kind: string, source: () => PairSource): void {
  describe(`${kind} session stream contract`, () => {
    const opened: SessionStream[] = [];
    const pair = async (): Promise<[SessionStream, SessionStream]> => {
      const streams = await source().connect();
      opened.push(...streams);
      return streams;
    };
    afterEach(async () => {
      for (const stream of opened.splice(0)) {
        stream.on('error', () => {});
        stream.destroy();
        await closed(stream);
      }
    });

    it('echoes bytes and reports its kind', async () => {
      const [client, server] = await pair();
      expect(client.info.kind).toBe(kind);
      expect(server.info.kind).toBe(kind);
      server.pipe(server);
      client.write('hello, session');
      expect((await readBytes(client, 14)).toString()).toBe('hello, session');
    });

    it('moves 10 MB each way in random chunks, byte-exact', async () => {
      const [client, server] = await pair();
      const up = randomBytes(10 * 1024 * 1024, 1);
      const down = randomBytes(10 * 1024 * 1024, 2);
      const [, , gotUp, gotDown] = await Promise.all([
        writeChunked(client, up, 3),
        writeChunked(server, down, 4),
        readAll(server),
        readAll(client),
      ]);
      expect(gotUp.length).toBe(up.length);
      expect(gotUp.equals(up)).toBe(true);
      expect(gotDown.length).toBe(down.length);
      expect(gotDown.equals(down)).toBe(true);
    }, 60_000);

    it('half-closes: the peer reads EOF and can still answer', async () => {
      const [client, server] = await pair();
      client.end('question');
      const question = await readAll(server); // resolves only on EOF
      expect(question.toString()).toBe('question');
      server.end('answer after your FIN');
      expect((await readAll(client)).toString()).toBe('answer after your FIN');
      await Promise.all([closed(client), closed(server)]);
    });

    // Aborts follow a round trip, as in a real session: libuv reports an RST that arrives together
    // with bytes the peer has not read yet as a plain EOF (see README, "Error semantics").
    const roundTrip = async (client: SessionStream, server: SessionStream): Promise<void> => {
      client.write('ping');
      await readBytes(server, 4);
      server.write('pong');
      await readBytes(client, 4);
    };

    it('client abort reaches the server as ECONNRESET', async () => {
      const [client, server] = await pair();
      await roundTrip(client, server);
      server.resume();
      const serverError = nextError(server);
      const clientError = nextError(client);
      client.destroy(new Error('client gave up'));
      expect((await clientError)?.message).toBe('client gave up');
      expect((await serverError)?.code).toBe('ECONNRESET');
    });

    it('server abort reaches the client as ECONNRESET', async () => {
      const [client, server] = await pair();
      await roundTrip(client, server);
      client.resume();
      const clientError = nextError(client);
      server.on('error', () => {});
      server.destroy(new Error('server gave up'));
      expect((await clientError)?.code).toBe('ECONNRESET');
    });

    it('reports readyState like net.Socket through end and close (postgres.js relies on it)', async () => {
      const [client, server] = await pair();
      expect([client.readyState, server.readyState]).toEqual(['open', 'open']);
      client.end('bye');
      expect(client.readyState).toBe('readOnly');
      expect((await readAll(server)).toString()).toBe('bye');
      expect(server.readyState).toBe('writeOnly');
      const clientEof = readAll(client);
      server.end();
      expect((await clientEof).length).toBe(0);
      await Promise.all([closed(client), closed(server)]);
      expect([client.readyState, server.readyState]).toEqual(['closed', 'closed']);
    });

    it('a graceful destroy is EOF for the peer, not an error', async () => {
      const [client, server] = await pair();
      const read = readAll(client);
      server.destroy();
      expect((await read).length).toBe(0);
    });
  });
}
