// The manager's observability: counters for connections, streams in use, waits, failures,
// handshakes and resumptions, and its events, against a real pooler.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QuicTicketStore } from '@quicpool/transport';
import { SessionManager } from '@quicpool/client';
import { discardStream } from './helpers.js';
import { quicOptions, startQuicPooler, until } from './helpers.js';
import type { TestPooler } from './helpers.js';

let p: TestPooler;
beforeAll(async () => {
  p = await startQuicPooler();
});
afterAll(async () => {
  await p.close();
});

describe('session manager counters and events', () => {
  it('counts connections, streams in use, waits, handshakes, resumptions and failures', async () => {
    const tickets = new QuicTicketStore();
    const down = await startQuicPooler();
    const downEndpoint = down.endpoint;
    await down.close(); // nothing answers there any more
    const m = new SessionManager(await quicOptions([p.endpoint], { maxConnections: 1, streamsPerConnection: 2, tickets }));
    const opened: Array<{ endpoint: string; resumed: boolean }> = [];
    m.on('connectionOpen', (e) => opened.push(e));
    try {
      const [a, b] = await Promise.all([m.acquire(), m.acquire()]); // nothing open yet: both wait
      let s = m.stats();
      expect(s).toMatchObject({ connections: 1, connecting: 0, streamsInUse: 2, waiting: 0, acquired: 2, waits: 2, handshakes: 1, resumptions: 0 });
      const third = m.acquire(); // the only connection is full
      await until(() => m.stats().waiting === 1);
      expect(m.stats().waits).toBe(3);
      discardStream(a!);
      const c = await third;
      s = m.stats();
      expect(s).toMatchObject({ streamsInUse: 2, waiting: 0, acquired: 3, connectionFailures: 0, connectionsLost: 0, acquireFailures: 0 });
      discardStream(b!);
      discardStream(c);
      await until(() => m.stats().streamsInUse === 0);
      expect(opened).toEqual([{ endpoint: p.endpoint, resumed: false }]);
    } finally {
      await m.close();
    }
    await until(() => tickets.size === 1);

    // A new manager resumes (0-RTT) with the ticket; one to a dead pooler counts its failure.
    const again = new SessionManager(await quicOptions([p.endpoint], { tickets }));
    const dead = new SessionManager(await quicOptions([downEndpoint], { connectTimeoutMs: 1_000 }));
    const downEvents: string[] = [];
    dead.on('endpointDown', (e) => downEvents.push(e.endpoint));
    try {
      discardStream(await again.acquire());
      await until(() => again.stats().resumptions === 1);
      expect(again.stats()).toMatchObject({ handshakes: 1, resumptions: 1, acquired: 1 });
      await expect(dead.acquire()).rejects.toThrow(/no quicpool pooler reachable/);
      expect(dead.stats()).toMatchObject({ handshakes: 1, connectionFailures: 1, acquireFailures: 1, connections: 0 });
      expect(downEvents).toEqual([downEndpoint]);
    } finally {
      await again.close();
      await dead.close();
    }
  }, 20_000);
});
