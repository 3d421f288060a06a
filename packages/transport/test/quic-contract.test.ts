// QUIC session streams against the same contract as TCP, TLS and the in-memory pair
// (contract.ts). A QUIC stream exists for the server only once bytes arrive on it, so each pair
// starts with a one-byte marker from the client that the server consumes before handing it over.
import { once } from 'node:events';
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { SessionStream } from '../src/index.js';
import { QuicDialer, QuicListener } from '../src/index.js';
import { describeSessionStreamContract } from './contract.js';
import { acceptedPairs } from './helpers.js';
import { devCerts, expectedUdpIo } from './quic-helpers.js';

let listener: QuicListener;
let dialer: QuicDialer;
let accepted: (client: SessionStream) => Promise<SessionStream>;

beforeAll(async () => {
  const c = await devCerts();
  listener = await QuicListener.listen({ cert: c.cert, key: c.key });
  accepted = acceptedPairs(listener);
  dialer = new QuicDialer({ host: '127.0.0.1', port: listener.address().port, serverName: 'localhost', ca: c.ca });
});
afterAll(async () => {
  await dialer.close();
  await listener.close({ graceful: false });
});

/** Consumes exactly one byte without switching the stream to flowing mode. */
async function takeMarker(s: SessionStream): Promise<void> {
  for (;;) {
    const b = s.read(1) as Buffer | null;
    if (b !== null) return;
    await once(s, 'readable');
  }
}

test('the contract runs over this suite\'s I/O path', async () => {
  expect((await dialer.stats()).io).toBe(expectedUdpIo());
  expect(listener.stats().io).toBe(expectedUdpIo());
});

describeSessionStreamContract('quic', () => ({
  async connect() {
    const client = await dialer.open();
    client.write(Buffer.from([0x51]));
    const server = await accepted(client);
    await takeMarker(server);
    return [client, server];
  },
}));
