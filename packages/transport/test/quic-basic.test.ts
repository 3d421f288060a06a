// The lean QUIC endpoint end to end over loopback: echo, bulk transfer with backpressure,
// half-close, resets, connection loss, idle timeout and certificate verification.
import { randomBytes, randomInt } from 'node:crypto';
import { once } from 'node:events';
import { afterEach, describe, expect, test, vi } from 'vitest';
import type { SessionStream } from '../src/session-stream.js';
import { TransportError } from '../src/session-stream.js';
import { QuicDialer, QuicListener } from '../src/quic/index.js';
import type { QuicDialerOptions, QuicServerOptions } from '../src/quic/index.js';
import { devCerts, errorOf, makeCerts, readAll, readN, waitFor } from './quic-helpers.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(
  server: Partial<QuicServerOptions> = {},
  client: Partial<QuicDialerOptions> = {},
): Promise<{ listener: QuicListener; dialer: QuicDialer; sessions: SessionStream[] }> {
  const c = await devCerts();
  const listener = await QuicListener.listen({ cert: c.cert, key: c.key, ...server });
  const sessions: SessionStream[] = [];
  listener.onSession((s) => {
    s.on('error', ignore);
    sessions.push(s);
  });
  const dialer = new QuicDialer({ host: '127.0.0.1', port: listener.address().port, serverName: 'localhost', ca: c.ca, ...client });
  cleanups.push(() => listener.close({ graceful: false }));
  cleanups.push(() => dialer.close({ graceful: false }));
  return { listener, dialer, sessions };
}

describe('QUIC session streams', () => {
  test('echo carries bytes both ways and reports QUIC session info', async () => {
    const { listener, dialer } = await setup();
    listener.onSession((s) => s.pipe(s));
    const s = await open(dialer);
    s.end('hello over quic');
    expect((await readAll(s)).toString()).toBe('hello over quic');
    expect(s.info.kind).toBe('quic');
    expect(s.info.tls?.alpnProtocol).toBe('pgsql/3');
    expect(s.info.quic?.streamId).toBe(0);
    expect(s.info.tls?.authorized).toBe(true);
    expect(s.info.tls?.servername).toBe('localhost');
    await waitFor(() => listener.stats().streams === 0, 2000, 'server streams released');
  });

  test('works over IPv6 loopback (::1)', async () => {
    const { listener, dialer } = await setup({ host: '::1' }, {});
    listener.onSession((s) => s.pipe(s));
    const d6 = new QuicDialer({ host: '::1', port: listener.address().port, serverName: 'quicpool.test', ca: (await devCerts()).ca });
    cleanups.push(() => d6.close({ graceful: false }));
    void dialer;
    const s = await open(d6);
    s.end('v6');
    expect((await readAll(s)).toString()).toBe('v6');
    expect(s.info.remoteAddress).toBe('::1');
  });

  test('ACKs wait briefly for an asynchronous reply: 2 datagrams per round trip', async () => {
    const { listener, dialer } = await setup();
    listener.onSession((s) => {
      // Answer in a later turn, as a pooler does after asking Postgres.
      s.on('error', ignore);
      s.on('data', (d: Buffer) => setImmediate(() => s.write(d)));
      s.on('end', () => s.end());
    });
    const s = await open(dialer);
    const msg = Buffer.alloc(200, 1);
    s.write(msg);
    await readN(s, 200); // warm-up: handshake and stream set-up are not counted
    const c0 = await dialer.stats();
    const s0 = listener.stats();
    const rounds = 200;
    for (let i = 0; i < rounds; i++) {
      const res = readN(s, 200);
      s.write(msg);
      await res;
    }
    const c1 = await dialer.stats();
    const s1 = listener.stats();
    const perRt = (c1.datagramsOut - c0.datagramsOut + s1.datagramsOut - s0.datagramsOut) / rounds;
    expect(perRt).toBeLessThan(2.2);
    s.end();
  });

  test('with retry: true the server validates the address with a Retry first', async () => {
    const { listener, dialer } = await setup({ retry: true });
    listener.onSession((s) => s.pipe(s));
    const s = await open(dialer);
    s.end('validated');
    expect((await readAll(s)).toString()).toBe('validated');
    expect(listener.stats()).toMatchObject({ retriesSent: 1, handshakes: 1 });
  });

  test('10 MB each way in random chunks arrives byte-exact', async () => {
    const { listener, dialer } = await setup();
    const size = 10 * 1024 * 1024;
    const up = randomBytes(size);
    const down = randomBytes(size);
    const serverGot = new Promise<Buffer>((resolve, reject) => {
      listener.onSession((s) => {
        readAll(s).then(resolve, reject);
        void writeChunked(s, down);
      });
    });
    const s = await open(dialer);
    const clientGot = readAll(s);
    await writeChunked(s, up);
    const [a, b] = await Promise.all([serverGot, clientGot]);
    expect(a.length).toBe(size);
    expect(a.equals(up)).toBe(true);
    expect(b.length).toBe(size);
    expect(b.equals(down)).toBe(true);
  }, 30_000);

  test('half-close: the server keeps writing after the client FIN', async () => {
    const { listener, dialer } = await setup();
    listener.onSession((s) => {
      s.on('error', ignore);
      void readAll(s).then((req) => {
        s.write('got:');
        setTimeout(() => s.end(req), 20);
      });
    });
    const s = await open(dialer);
    s.end('question');
    expect((await readAll(s)).toString()).toBe('got:question');
  });

  test('client destroy(err) resets the server stream; server destroy(err) resets the client stream', async () => {
    const { listener, dialer, sessions } = await setup();
    const a = await open(dialer);
    a.write('x');
    await waitFor(() => sessions.length === 1);
    const serverA = sessions[0]!;
    const serverErr = errorOf(serverA);
    a.on('error', ignore);
    a.destroy(new Error('client aborts')); // a plain destroy() is a FIN instead (quic-contract.test.ts)
    const e1 = await serverErr;
    expect(e1).toBeInstanceOf(TransportError);
    expect(e1.code).toBe('ECONNRESET');

    const b = await open(dialer);
    b.write('y');
    await waitFor(() => sessions.length === 2);
    const clientErr = errorOf(b);
    sessions[1]!.destroy(new Error('server aborts'));
    const e2 = await clientErr;
    expect(e2.code).toBe('ECONNRESET');
    // Both directions were shut down: no stream is left behind on either side.
    await waitFor(() => listener.stats().streams === 0, 2000, 'server streams released');
    expect((await dialer.stats()).streams).toBe(0);
  });

  test('streams reset before the server first reads them are never handed out; it keeps serving', async () => {
    const { listener, dialer } = await setup();
    let handedOut = 0;
    listener.onSession((s) => {
      handedOut++;
      s.pipe(s);
    });
    // open() resolves on a connection that is already established, so each write + destroy below
    // runs in one event-loop turn: our one flush sends only RESET_STREAM + STOP_SENDING (quiche
    // drops the unsent bytes), and the server first meets each stream already reset, while
    // discovering it. That is the case discover() guards: the stream's error must not escape
    // (vitest fails the test on an uncaught error) and the stream must not reach onSession.
    const warm = await open(dialer);
    warm.end('warm-up');
    expect((await readAll(warm)).toString()).toBe('warm-up');
    for (let i = 0; i < 20; i++) {
      const s = await open(dialer);
      s.on('error', ignore);
      if (i % 2 === 0) s.write('hello'); // with and without data before the reset
      s.destroy(new Error('client gives up'));
    }
    await waitFor(() => listener.stats().streamsResetBeforeAccept === 20, 3000, '20 streams met reset at discovery');
    const ok = await open(dialer);
    ok.end('still there?');
    expect((await readAll(ok)).toString()).toBe('still there?');
    expect(handedOut).toBe(2); // warm-up and the last one
    expect(listener.stats().streamsResetBeforeAccept).toBe(20);
  });

  test('losing the connection errors all 40 open streams promptly', async () => {
    const { listener, dialer, sessions } = await setup();
    const streams = await Promise.all(Array.from({ length: 40 }, () => open(dialer)));
    for (const s of streams) s.write('ping');
    await waitFor(() => sessions.length === 40, 3000, '40 server sessions');
    const errors = Promise.all(streams.map((s) => errorOf(s)));
    const serverErrors = Promise.all(sessions.map((s) => errorOf(s)));
    await listener.close({ graceful: false });
    const errs = await errors;
    expect(errs).toHaveLength(40);
    for (const e of errs) {
      expect(e).toBeInstanceOf(TransportError);
      expect(e.code).toBe('ECONNRESET'); // the server's CONNECTION_CLOSE; the idle timeout gives ETIMEDOUT
      expect(e.message).toMatch(/closed by peer .*endpoint shut down/);
    }
    for (const e of await serverErrors) expect(e.code).toBe('ECONNABORTED');
    // Promptly: from the server's one CONNECTION_CLOSE, on its arrival. Its socket is gone with
    // it, so no repeat could have answered a packet of the client (a probe its own timer may send
    // on a loaded machine), and ECONNRESET rules out the idle timeout.
    expect((await dialer.stats()).streams).toBe(0);
    // The dialer opens a fresh connection on next use; with the server gone that fails cleanly.
  });

  test('a forced close reaches peers whose receive buffer is full (CONNECTION_CLOSE is repeated)', async () => {
    // The client floods 40 streams, so the server's socket buffer is full when the client
    // force-closes: its one CONNECTION_CLOSE is easily dropped there. The server must still learn
    // of the close promptly (from a repeat, sent in answer to its next packets), not after its
    // 30 s idle timeout.
    const { listener, dialer, sessions } = await setup();
    listener.onSession((s) => {
      s.on('error', ignore);
      sessions.push(s);
      s.resume();
    });
    const streams = await Promise.all(Array.from({ length: 40 }, () => open(dialer)));
    const chunk = Buffer.alloc(256 * 1024, 7);
    for (const s of streams) {
      s.on('error', ignore);
      s.write('x');
    }
    await waitFor(() => sessions.length === 40, 5000, '40 server sessions');
    for (const s of streams) {
      const pump = (): void => {
        while (!s.destroyed && s.write(chunk));
      };
      s.on('drain', pump);
      pump();
    }
    await new Promise((r) => setTimeout(r, 300));
    const serverErrors = Promise.all(sessions.map((s) => errorOf(s)));
    await dialer.close({ graceful: false });
    const errs = await serverErrors;
    // ECONNRESET: the server learned of the close from a CONNECTION_CLOSE (the first or a repeat).
    // Had none reached it, only its idle timeout (30 s, longer than this test may run) would have
    // ended the connection, with ETIMEDOUT.
    for (const e of errs) expect(e.code).toBe('ECONNRESET');
    await waitFor(() => listener.stats().connections === 0, 2000, 'server connection gone');
  }, 20_000);

  test('graceful close returns promptly once every stream is finished', async () => {
    const { listener, dialer } = await setup();
    listener.onSession((s) => s.pipe(s));
    const answers = await Promise.all(Array.from({ length: 10 }, async (_, i) => {
      const s = await open(dialer);
      const res = readAll(s);
      s.end(`q${i}`);
      return (await res).toString();
    }));
    expect(answers).toEqual(Array.from({ length: 10 }, (_, i) => `q${i}`));
    const [clientConn] = (await dialer.endpoint()).connections;
    const [serverConn] = listener.endpoint.connections;
    // Nothing is left to deliver: no waiting for quiche's draining period (3 PTO, ~1 s early in a
    // connection) or for stream bookkeeping. quiche marks a draining connection closed only from
    // onTimeout(), once its draining timer has expired; each side drops its connection (and the
    // connection's timers) as soon as draining starts, so that timer never fires.
    await dialer.close();
    expect(clientConn?.isClosed).toBe(true);
    expect(clientConn?.q.isDraining()).toBe(true);
    expect(clientConn?.q.isClosed()).toBe(false);
    expect((await dialer.stats()).connections).toBe(0);
    await waitFor(() => listener.stats().connections === 0, 1000, 'server saw the close');
    expect(serverConn?.q.isDraining()).toBe(true);
    expect(serverConn?.q.isClosed()).toBe(false);
    // And the listener, with no connection left, closes without arming a single timer.
    expect(await quicTimersArmedDuring(() => listener.close())).toBe(0);
  });

  test('streams flooding one connection share its window: none starves before its first byte', async () => {
    // Server windows far below what 40 streams want at once. The first streams to block used to
    // take every new MAX_DATA credit, so later streams never got a first byte to the server.
    const { listener, dialer } = await setup({ initialMaxData: 2 * 1024 * 1024, initialMaxStreamData: 256 * 1024 });
    const perStream = 512 * 1024;
    let received = 0;
    let receivedAtLastSession = -1;
    let sessions = 0;
    const done: Array<Promise<number>> = [];
    listener.onSession((s) => {
      s.on('error', ignore);
      if (++sessions === 40) receivedAtLastSession = received;
      done.push(new Promise((resolve) => {
        let n = 0;
        s.on('data', (d: Buffer) => {
          n += d.length;
          received += d.length;
        });
        s.on('end', () => resolve(n));
      }));
    });
    const streams = await Promise.all(Array.from({ length: 40 }, () => open(dialer)));
    const chunk = Buffer.alloc(64 * 1024, 3);
    for (const s of streams) {
      s.on('error', ignore);
      for (let sent = 0; sent < perStream; sent += chunk.length) s.write(chunk);
      s.end();
    }
    await waitFor(() => sessions === 40, 10_000, '40 server sessions');
    // Credit moves in per-stream-window steps (256 KiB), so the last first byte arrives after a
    // few MiB (~5 measured); starving streams would wait until earlier ones finished (> 75%).
    expect(receivedAtLastSession).toBeLessThan((40 * perStream) / 2);
    const sizes = await Promise.all(done);
    expect(sizes).toEqual(Array.from({ length: 40 }, () => perStream));
  }, 30_000);

  test('idle timeout closes a silent connection; keep-alive keeps another one open', async () => {
    // The idle timeout in effect is the smaller of the two sides' (RFC 9000, 10.1): 300 ms here.
    const { listener, dialer, sessions } = await setup({ idleTimeoutMs: 1000 }, { idleTimeoutMs: 300, keepAliveMs: 0 });
    const s = await open(dialer);
    s.write('hi');
    await waitFor(() => sessions.length === 1);
    // ETIMEDOUT on both sides: only quiche's idle timer ends a connection that way (a close by
    // either side gives ECONNRESET / ECONNABORTED). The keep-alive half below proves the timer
    // counts silence, not connection age.
    const [ce, se] = await Promise.all([errorOf(s), errorOf(sessions[0]!)]);
    expect(ce.code).toBe('ETIMEDOUT');
    expect(se.code).toBe('ETIMEDOUT');
    await waitFor(() => listener.stats().connections === 0, 2000, 'server connection gone');

    const kept = new QuicDialer({
      host: '127.0.0.1', port: listener.address().port, serverName: 'localhost',
      ca: (await devCerts()).ca, idleTimeoutMs: 1000, keepAliveMs: 100,
    });
    cleanups.push(() => kept.close({ graceful: false }));
    const k = await open(kept);
    k.write('a');
    // Twice the idle timeout; a PING every 100 ms leaves 900 ms for a stall of the loaded machine.
    await new Promise((r) => setTimeout(r, 2000));
    k.end('b');
    await waitFor(() => sessions.length === 2);
    expect((await readAll(sessions[1]!)).toString()).toBe('ab');
  });

  test('the client never exceeds the stream credit the server grants; waiting opens complete', async () => {
    const { listener, dialer } = await setup({ maxStreamsPerConnection: 4 });
    let concurrent = 0;
    let peak = 0;
    listener.onSession((s) => {
      concurrent++;
      peak = Math.max(peak, concurrent);
      s.on('error', ignore);
      void readAll(s).then((req) => setTimeout(() => {
        concurrent--;
        s.end(req);
      }, 5));
    });
    const answers = await Promise.all(Array.from({ length: 30 }, async (_, i) => {
      const s = await open(dialer);
      const res = readAll(s);
      s.end(`req ${i}`);
      return (await res).toString();
    }));
    expect(answers).toEqual(Array.from({ length: 30 }, (_, i) => `req ${i}`));
    expect(peak).toBeLessThanOrEqual(4);
    expect((await dialer.stats()).connections).toBe(1);
  });

  test('graceful close lets open sessions finish, then closes the connections', async () => {
    const { listener, dialer, sessions } = await setup();
    listener.onSession((s) => {
      sessions.push(s);
      s.pipe(s);
    });
    const s = await open(dialer);
    s.write('first ');
    await waitFor(() => sessions.length === 1);
    const closed = listener.close({ graceful: true });
    let done = false;
    void closed.then(() => { done = true; });
    await new Promise((r) => setTimeout(r, 50));
    expect(done).toBe(false);
    const res = readAll(s);
    s.end('last');
    expect((await res).toString()).toBe('first last');
    await closed;
    expect(listener.stats().connections).toBe(0);
  });

  test('a graceful close with timeoutMs forces sessions that do not finish', async () => {
    const { listener, dialer, sessions } = await setup();
    const s = await open(dialer);
    s.write('never finishes');
    await waitFor(() => sessions.length === 1);
    const err = errorOf(s);
    const serverErr = errorOf(sessions[0]!);
    const order: string[] = [];
    // A marker timer as long as timeoutMs, armed just before the close: Node runs timers of equal
    // length in the order they were armed, so the close's own timeout fires right after it.
    setTimeout(() => order.push('timeoutMs elapsed'), 150);
    void serverErr.then(() => order.push('server session aborted'));
    void err.then(() => order.push('client stream reset'));
    await listener.close({ graceful: true, timeoutMs: 150 });
    // The session had not finished: forced, both ends errored, and only after the graceful wait.
    expect((await serverErr).code).toBe('ECONNABORTED');
    expect((await err).code).toBe('ECONNRESET');
    expect(order).toEqual(['timeoutMs elapsed', 'server session aborted', 'client stream reset']);
    expect(listener.stats().connections).toBe(0);
  });

  test('dialing a port where no server listens fails fast with ECONNREFUSED', async () => {
    const { listener } = await setup();
    const port = listener.address().port;
    await listener.close({ graceful: false });
    const d = new QuicDialer({ host: '127.0.0.1', port, serverName: 'localhost', ca: (await devCerts()).ca });
    cleanups.push(() => d.close({ graceful: false }));
    const err: unknown = await d.open().then(() => null, (e: unknown) => e);
    expect(err).toBeInstanceOf(TransportError);
    expect((err as TransportError).code).toBe('ECONNREFUSED');
    // Fast: failed on the ICMP port-unreachable answer to the first flight. No probe timeout
    // fired (it would have retransmitted the Initial) and no handshake timeout (ETIMEDOUT).
    const st = await d.stats();
    expect(st.socketErrors).toBeGreaterThanOrEqual(1);
    expect(st.datagramsOut).toBe(FIRST_FLIGHT_DATAGRAMS);
    expect(st.connections).toBe(0);
  });

  test('a certificate from another CA is refused with ERR_TLS_CERT', async () => {
    const other = await makeCerts();
    const { dialer } = await setup({}, { ca: other.ca });
    const err: unknown = await open(dialer).then(() => null, (e: unknown) => e);
    expect(err).toBeInstanceOf(TransportError);
    expect((err as TransportError).code).toBe('ERR_TLS_CERT');
    expect((err as TransportError).message).toMatch(/localhost/);
  });

  test('a certificate for another name is refused with ERR_TLS_CERT', async () => {
    const { dialer } = await setup({}, { serverName: 'db.example.org' });
    const err: unknown = await open(dialer).then(() => null, (e: unknown) => e);
    expect(err).toBeInstanceOf(TransportError);
    expect((err as TransportError).code).toBe('ERR_TLS_CERT');
    expect((err as TransportError).message).toMatch(/db\.example\.org/);
  });

  test('dangerouslySkipVerify connects despite an untrusted certificate', async () => {
    const { listener, dialer } = await setup({}, { ca: undefined, serverName: 'anything.invalid', dangerouslySkipVerify: true });
    listener.onSession((s) => s.pipe(s));
    const s = await open(dialer);
    s.end('ok');
    expect((await readAll(s)).toString()).toBe('ok');
    expect(s.info.tls?.authorized).toBe(false);
  });
});

async function writeChunked(s: SessionStream, data: Buffer): Promise<void> {
  let off = 0;
  while (off < data.length) {
    const n = Math.min(randomInt(1, 64 * 1024), data.length - off);
    if (!s.write(data.subarray(off, off + n))) await once(s, 'drain');
    off += n;
  }
  s.end();
}

function ignore(): void {}

/** A client's first flight: its Initial (the ClientHello, padded to 1,200 bytes) in one datagram. */
const FIRST_FLIGHT_DATAGRAMS = 1;

/**
 * Runs `f` and counts the timers the QUIC endpoint's code (src/quic, told by the caller's stack)
 * arms meanwhile: a close that arms none waited for no period at all.
 */
async function quicTimersArmedDuring(f: () => Promise<void>): Promise<number> {
  const realSetTimeout = globalThis.setTimeout;
  let armed = 0;
  const spy = vi.spyOn(globalThis, 'setTimeout').mockImplementation(((...args: Parameters<typeof setTimeout>) => {
    if (/[\\/]src[\\/]quic[\\/]/.test(new Error().stack ?? '')) armed++;
    return realSetTimeout(...args);
  }) as typeof setTimeout);
  try {
    await f();
  } finally {
    spy.mockRestore();
  }
  return armed;
}

/** Opens a stream with an error listener, as an application would have (tests assert errors via errorOf). */
async function open(d: QuicDialer): Promise<SessionStream> {
  const s = await d.open();
  s.on('error', ignore);
  return s;
}
