import { randomBytes } from 'node:crypto';
import dgram from 'node:dgram';
import { once } from 'node:events';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { WanEmulator } from './emulator.js';
import { startWanEmulator, summarize } from './emulator.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function tcpEcho(): Promise<number> {
  const server = net.createServer({ noDelay: true }, (socket) => {
    socket.on('error', () => {});
    socket.pipe(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return (server.address() as net.AddressInfo).port;
}

/** A UDP target that echoes and records which peers it saw. */
async function udpEcho(): Promise<{ port: number; peers: Set<string>; received: () => number }> {
  const socket = dgram.createSocket('udp4');
  const peers = new Set<string>();
  let received = 0;
  socket.on('message', (data, rinfo) => {
    received++;
    peers.add(`${rinfo.address}:${rinfo.port}`);
    socket.send(data, rinfo.port, rinfo.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => socket.close(() => resolve())));
  return { port: socket.address().port, peers, received: () => received };
}

async function emulator(options: Parameters<typeof startWanEmulator>[0]): Promise<WanEmulator> {
  const wan = await startWanEmulator(options);
  cleanups.push(() => wan.close());
  return wan;
}

async function connect(port: number): Promise<net.Socket> {
  const socket = net.connect({ port, host: '127.0.0.1', noDelay: true });
  await once(socket, 'connect');
  cleanups.push(() => {
    socket.destroy();
  });
  return socket;
}

// The delay is a correctness property: never early (a lower bound on every sample, min included)
// and nothing lost in a queue (counters: every byte crossed each direction's line exactly once,
// nothing is left queued or dropped). How late a packet comes out depends on the machine's load,
// so no upper bound on a latency here: that is a benchmark matter, and every benchmark reports the
// RTT it measured through the emulator.
function expectRelayedOnce(wan: WanEmulator, bytesEachWay: number): void {
  const { up, down } = wan.stats();
  for (const line of [up, down]) {
    // Calibration probes are 0-byte items: the bytes are the traffic alone.
    expect(line.passedBytes).toBe(bytesEachWay);
    expect(line.queued).toBe(0);
    expect(line.overflowDrops).toBe(0);
  }
}

describe('WAN emulator', () => {
  it('adds 2 x delay to a TCP round trip, and measures it itself', async () => {
    const wan = await emulator({ targetHost: '127.0.0.1', targetPort: await tcpEcho(), protocol: 'tcp', delayMs: 10 });
    // Its own probe never comes back early: min, not only median, is at least the configured RTT.
    expect(wan.stats().measuredRtt?.minMs).toBeGreaterThanOrEqual(20);
    // Every probe went through both lines (10 warm-up probes, then the 20 measured).
    expect(wan.stats().measuredRtt?.samples).toBe(20);
    expect(wan.stats().up.passed).toBe(30);
    expect(wan.stats().down.passed).toBe(30);
    const socket = await connect(wan.port);
    const times: number[] = [];
    for (let i = 0; i < 30; i++) {
      const start = performance.now();
      socket.write(Buffer.alloc(200, i));
      let got = 0;
      while (got < 200) got += ((await once(socket, 'data')) as [Buffer])[0].length;
      times.push(performance.now() - start);
    }
    const rtt = summarize(times);
    expect(rtt.minMs).toBeGreaterThanOrEqual(20);
    expectRelayedOnce(wan, 30 * 200);
  });

  it('adds 2 x delay to a UDP round trip', async () => {
    const target = await udpEcho();
    const wan = await emulator({ targetHost: '127.0.0.1', targetPort: target.port, protocol: 'udp', delayMs: 15 });
    const client = dgram.createSocket('udp4');
    cleanups.push(() => new Promise<void>((resolve) => client.close(() => resolve())));
    client.connect(wan.port, '127.0.0.1');
    await once(client, 'connect');
    const times: number[] = [];
    for (let i = 0; i < 20; i++) {
      const start = performance.now();
      client.send(Buffer.alloc(100, i));
      await once(client, 'message');
      times.push(performance.now() - start);
    }
    expect(summarize(times).minMs).toBeGreaterThanOrEqual(30);
    expectRelayedOnce(wan, 20 * 100);
    expect(target.received()).toBe(20);
    expect(wan.stats().up.passed).toBe(30 + 20); // the probes, then each datagram once
    expect(wan.stats().down.passed).toBe(30 + 20);
  });

  it('drops UDP datagrams at the configured rate (binomial, 4 sigma)', async () => {
    const target = await udpEcho();
    const wan = await emulator({ targetHost: '127.0.0.1', targetPort: target.port, protocol: 'udp', lossRate: { up: 0.2, down: 0 }, seed: 7, calibrationProbes: 0 });
    const client = dgram.createSocket('udp4');
    cleanups.push(() => new Promise<void>((resolve) => client.close(() => resolve())));
    let echoed = 0;
    client.on('message', () => echoed++);
    client.connect(wan.port, '127.0.0.1');
    await once(client, 'connect');
    const sent = 5000;
    for (let i = 0; i < sent; i++) {
      client.send(Buffer.alloc(32));
      if (i % 50 === 49) await new Promise((r) => setTimeout(r, 1)); // stay below socket buffers
    }
    await new Promise((r) => setTimeout(r, 200));
    const stats = wan.stats();
    // Judge the rate over what reached the emulator: loopback UDP itself may drop some under load.
    const arrived = stats.udp.lostUp + stats.up.passed;
    expect(arrived).toBeGreaterThan(sent * 0.5);
    const sigma = Math.sqrt(arrived * 0.2 * 0.8);
    expect(Math.abs(stats.udp.lostUp - arrived * 0.2)).toBeLessThan(4 * sigma);
    expect(target.received()).toBeLessThanOrEqual(stats.up.passed);
    expect(target.received()).toBeGreaterThan(stats.up.passed * 0.9);
    expect(stats.udp.lostDown).toBe(0); // no loss configured downstream
    expect(echoed).toBeGreaterThan(target.received() * 0.9);
  });

  it('relays TCP byte-exact in both directions, including half-close', async () => {
    const wan = await emulator({ targetHost: '127.0.0.1', targetPort: await tcpEcho(), protocol: 'both', delayMs: 2 });
    const socket = await connect(wan.port);
    const data = randomBytes(5 * 1024 * 1024);
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    const ended = once(socket, 'end');
    socket.end(data);
    await ended;
    expect(Buffer.concat(chunks).equals(data)).toBe(true);
  });

  it('gives every UDP client its own upstream peer and relays datagrams intact', async () => {
    const target = await udpEcho();
    const wan = await emulator({ targetHost: '127.0.0.1', targetPort: target.port, protocol: 'both', delayMs: 1 });
    const payloads = [randomBytes(1200), randomBytes(1200)];
    const replies = await Promise.all(
      payloads.map(async (payload) => {
        const client = dgram.createSocket('udp4');
        cleanups.push(() => new Promise<void>((resolve) => client.close(() => resolve())));
        client.connect(wan.port, '127.0.0.1');
        await once(client, 'connect');
        client.send(payload);
        return ((await once(client, 'message')) as [Buffer])[0];
      }),
    );
    expect(replies[0]?.equals(payloads[0] as Buffer)).toBe(true);
    expect(replies[1]?.equals(payloads[1] as Buffer)).toBe(true);
    expect(target.peers.size).toBe(2);
    expect(wan.stats().udpPeers).toBe(2);
  });

  it('close() ends connections, frees the port and drops what is queued', async () => {
    // A delay no stall of the machine reaches: the bytes are still queued when close() comes.
    const wan = await startWanEmulator({ targetHost: '127.0.0.1', targetPort: await tcpEcho(), protocol: 'tcp', delayMs: 60_000, calibrationProbes: 0 });
    const socket = await connect(wan.port);
    socket.on('error', () => {});
    socket.write('in flight');
    await vi.waitFor(() => expect(wan.stats().up.queued).toBe(1));
    const closed = once(socket, 'close');
    await wan.close();
    await closed;
    expect(wan.stats().up.queued).toBe(0);
    const refused = net.connect({ port: wan.port, host: '127.0.0.1' });
    const [error] = (await once(refused, 'error')) as [NodeJS.ErrnoException];
    expect(error.code).toBe('ECONNREFUSED');
  });

  it('closes idle UDP peers, and close() releases every socket', async () => {
    const target = await udpEcho();
    const wan = await startWanEmulator({ targetHost: '127.0.0.1', targetPort: target.port, protocol: 'udp', udpIdleMs: 200, calibrationProbes: 0 });
    const client = dgram.createSocket('udp4');
    cleanups.push(() => new Promise<void>((resolve) => client.close(() => resolve())));
    client.connect(wan.port, '127.0.0.1');
    await once(client, 'connect');
    client.send('hello');
    await once(client, 'message');
    expect(wan.stats().udpPeers).toBe(1);
    // The idle peer expires (udpIdleMs): wait for the counter, bounded, instead of for a duration.
    await vi.waitFor(() => expect(wan.stats().udp.peersExpired).toBe(1), { timeout: 5_000, interval: 10 });
    expect(wan.stats().udpPeers).toBe(0);
    expect(wan.stats().udp.peersExpired).toBe(1);
    await wan.close();
    // The port is free again: binding it succeeds.
    const rebind = dgram.createSocket('udp4');
    await new Promise<void>((resolve, reject) => {
      rebind.once('error', reject);
      rebind.bind(wan.port, '127.0.0.1', resolve);
    });
    await new Promise<void>((resolve) => rebind.close(() => resolve()));
  });
});
