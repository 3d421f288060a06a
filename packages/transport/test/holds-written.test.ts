// SessionStream.holdsWrittenBytes(): whether a writer may reuse the memory it wrote (the pooler
// forwards from a reused read buffer and asks after each batch of writes). Each kind answers from
// what it really does with a written Buffer.
import { afterEach, expect, test } from 'vitest';
import type { SessionStream } from '../src/index.js';
import { createMemoryPair, dialTcp, dialTls, listenTcp, listenTls, QuicDialer, QuicListener } from '../src/index.js';
import { acceptedPairs, readBytes } from './helpers.js';
import { devCerts } from './quic-helpers.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

test('a plain TCP socket holds nothing once a write completed; a TLS socket always may', async () => {
  const tcp = await listenTcp({ port: 0 });
  cleanups.push(() => tcp.close());
  const client = await dialTcp({ host: '127.0.0.1', port: tcp.address().port });
  const server = await acceptedPairs(tcp)(client);
  cleanups.push(() => void client.destroy(), () => void server.destroy());
  client.write(Buffer.alloc(100, 1));
  expect(client.holdsWrittenBytes()).toBe(false);
  await readBytes(server, 100);

  const c = await devCerts();
  const tls = await listenTls({ port: 0, cert: c.cert, key: c.key });
  cleanups.push(() => tls.close());
  const secure = await dialTls({ host: '127.0.0.1', port: tls.address().port, ca: c.ca, servername: 'localhost' });
  cleanups.push(() => void secure.destroy());
  secure.write(Buffer.alloc(100, 2));
  expect(secure.holdsWrittenBytes()).toBe(true);
});

test('an in-memory stream always holds (its peer receives the very Buffer)', () => {
  const [a, b] = createMemoryPair();
  cleanups.push(() => void a.destroy(), () => void b.destroy());
  a.write(Buffer.alloc(10));
  expect(a.holdsWrittenBytes()).toBe(true);
});

test('a QUIC stream holds nothing when quiche took the write, and holds what waits for flow control', async () => {
  const c = await devCerts();
  // A small stream window: the second large write cannot go into quiche at once.
  const listener = await QuicListener.listen({ cert: c.cert, key: c.key, initialMaxStreamData: 16 * 1024 });
  const served: SessionStream[] = [];
  listener.onSession((s) => {
    s.on('error', () => {});
    served.push(s);
  });
  const dialer = new QuicDialer({ host: '127.0.0.1', port: listener.address().port, serverName: 'localhost', ca: c.ca });
  cleanups.push(() => listener.close({ graceful: false }), () => dialer.close({ graceful: false }));
  const s = await dialer.open();
  s.on('error', () => {}); // the forced close at the end aborts it
  s.write(Buffer.alloc(1000, 3));
  expect(s.holdsWrittenBytes()).toBe(false);
  s.write(Buffer.alloc(64 * 1024, 4)); // beyond the peer's 16 KB stream window
  expect(s.holdsWrittenBytes()).toBe(true);
});
