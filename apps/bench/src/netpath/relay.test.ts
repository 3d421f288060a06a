// The relay (the forwarder between sockets, the WAN where the packet path cannot be built): TCP
// arrives byte-exact both ways and ends cleanly, no packet leaves before its delay, UDP loss is
// seeded (the same seed drops the same datagrams) and counted, and a TCP relay refuses loss.
import { randomBytes, createHash } from 'node:crypto';
import dgram from 'node:dgram';
import { once } from 'node:events';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { forwarderBuildUnavailableReason } from './build.js';
import type { RunningRelay } from './relay.js';
import { relayRtt, startRelay } from './relay.js';

const reason = forwarderBuildUnavailableReason();
const running: RunningRelay[] = [];
const closers: Array<() => void> = [];

afterEach(async () => {
  for (const close of closers.splice(0)) close();
  for (const r of running.splice(0)) await r.stop();
});

async function relay(o: Parameters<typeof startRelay>[0]): Promise<RunningRelay> {
  const r = await startRelay(o);
  running.push(r);
  return r;
}

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

/** Sends `count` numbered datagrams through `port` to a sink; resolves with the numbers that arrived. */
async function throughUdp(delayMs: number, lossRate: number, seed: number, count: number): Promise<{ arrived: number[]; drops: number }> {
  const sink = dgram.createSocket('udp4');
  const arrived: number[] = [];
  sink.on('message', (m) => arrived.push(m.readUInt32BE(0)));
  sink.bind(0, '127.0.0.1');
  await once(sink, 'listening');
  closers.push(() => sink.close());
  const r = await relay({ target: { host: '127.0.0.1', port: sink.address().port }, protocol: 'udp', delayMs, lossRate, seed });
  const sender = dgram.createSocket('udp4');
  closers.push(() => sender.close());
  for (let i = 0; i < count; i++) {
    const b = Buffer.alloc(64);
    b.writeUInt32BE(i, 0);
    sender.send(b, r.port, '127.0.0.1');
    if (i % 50 === 49) await new Promise((resolve) => setTimeout(resolve, 2));
  }
  let stats = await r.stats();
  for (let waited = 0; stats.up.packets + stats.up.randomDrops < count && waited < 5_000; waited += 50) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    stats = await r.stats();
  }
  await new Promise((resolve) => setTimeout(resolve, delayMs + 50));
  return { arrived: [...arrived].sort((a, b) => a - b), drops: (await r.stats()).up.randomDrops };
}

if (reason !== null) {
  describe('relay: unavailable here', () => {
    it('says why', async () => {
      expect(reason).toMatch(/cc|compiler|forwarder\.c/);
      await expect(startRelay({ target: { host: '127.0.0.1', port: 1 }, protocol: 'udp', delayMs: 1 })).rejects.toThrow();
    });
  });
} else {
  describe('relay', () => {
    it('carries TCP byte-exact both ways, never before the delay, and ends with the connection', async () => {
      const bytes = randomBytes(1 << 20);
      const server = net.createServer((socket) => {
        const got: Buffer[] = [];
        socket.on('data', (c: Buffer) => got.push(c));
        // The server answers with what it got once the client's side has ended, then ends too.
        socket.on('end', () => socket.end(Buffer.concat(got)));
      });
      server.listen(0, '127.0.0.1');
      await once(server, 'listening');
      closers.push(() => server.close());
      const port = (server.address() as net.AddressInfo).port;
      const r = await relay({ target: { host: '127.0.0.1', port }, protocol: 'tcp', delayMs: 5 });
      const client = net.connect(r.port, '127.0.0.1');
      const back: Buffer[] = [];
      client.on('data', (c: Buffer) => back.push(c));
      client.end(bytes);
      await once(client, 'close');
      expect(sha(Buffer.concat(back))).toBe(sha(bytes));
      const s = await r.stats();
      expect(s.up.bytes).toBe(bytes.length);
      expect(s.down.bytes).toBe(bytes.length);
      expect(s.up.queueDrops + s.down.queueDrops + s.up.randomDrops + s.down.randomDrops).toBe(0);
      // Never early: every packet spent at least the delay in the relay.
      expect(s.up.timeInForwarderUs?.min).toBeGreaterThanOrEqual(5_000);
      expect(s.down.timeInForwarderUs?.min).toBeGreaterThanOrEqual(5_000);
    });

    it('measures its round trip with UDP probes through a relay of its own, never below twice the delay', async () => {
      const rtt = await relayRtt(5, { count: 30, ratePerSec: 200 });
      expect(rtt).toMatchObject({ sent: 30, received: 30, corrupt: 0 });
      expect(rtt.minMs).toBeGreaterThanOrEqual(10);
    });

    it('holds back one connection whose reader is slow without stalling the others, and loses nothing', async () => {
      // The server sends 8 MiB at once on every connection; one client does not read for a while.
      const bytes = randomBytes(8 << 20);
      const server = net.createServer((socket) => socket.end(bytes));
      server.listen(0, '127.0.0.1');
      await once(server, 'listening');
      closers.push(() => server.close());
      const r = await relay({ target: { host: '127.0.0.1', port: (server.address() as net.AddressInfo).port }, protocol: 'tcp', delayMs: 2 });
      const receive = (socket: net.Socket): Promise<Buffer> => {
        const got: Buffer[] = [];
        socket.on('data', (c: Buffer) => got.push(c));
        return once(socket, 'end').then(() => Buffer.concat(got));
      };
      const slow = net.connect(r.port, '127.0.0.1');
      slow.pause();
      const slowGot = receive(slow);
      // While the slow client's bytes wait in the relay, another connection goes through whole.
      const fast = net.connect(r.port, '127.0.0.1');
      expect(sha(await receive(fast))).toBe(sha(bytes));
      slow.resume();
      expect(sha(await slowGot)).toBe(sha(bytes));
      slow.destroy();
      fast.destroy();
      const s = await r.stats();
      expect(s.down.queueDrops + s.down.writeErrors).toBe(0);
    });

    it('passes a reset on as a reset, not as an orderly end', async () => {
      const serverSide = new Promise<Error | null>((resolve) => {
        const server = net.createServer((socket) => {
          socket.on('error', (e) => resolve(e));
          socket.on('end', () => resolve(null));
        });
        server.listen(0, '127.0.0.1');
        closers.push(() => server.close());
        void once(server, 'listening').then(async () => {
          const r = await relay({ target: { host: '127.0.0.1', port: (server.address() as net.AddressInfo).port }, protocol: 'tcp', delayMs: 2 });
          const client = net.connect(r.port, '127.0.0.1');
          await once(client, 'connect');
          client.write('x');
          await new Promise((done) => setTimeout(done, 20));
          client.resetAndDestroy();
        });
      });
      const error = await serverSide;
      expect(error).not.toBeNull();
      expect((error as NodeJS.ErrnoException).code).toBe('ECONNRESET');
    });

    it('drops UDP datagrams at its rate, the same ones for the same seed, and counts them', async () => {
      const a = await throughUdp(1, 0.2, 7, 1_000);
      const b = await throughUdp(1, 0.2, 7, 1_000);
      expect(a.arrived.length + a.drops).toBe(1_000);
      expect(a.drops).toBeGreaterThan(120);
      expect(a.drops).toBeLessThan(280);
      expect(b.arrived).toEqual(a.arrived);
      const other = await throughUdp(1, 0.2, 8, 1_000);
      expect(other.arrived).not.toEqual(a.arrived);
    });

    it('refuses loss on a TCP relay (it cannot drop TCP segments)', async () => {
      await expect(startRelay({ target: { host: '127.0.0.1', port: 1 }, protocol: 'tcp', delayMs: 1, lossRate: 0.01 })).rejects.toThrow(/cannot drop TCP/);
    });
  });
}
