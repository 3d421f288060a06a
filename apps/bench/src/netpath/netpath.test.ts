// The packet-level WAN path: packets never leave before their delay, random loss matches its
// rate (and its seed), TCP and UDP arrive byte-exact, and nothing is left behind: not after
// close(), not after SIGKILL of the process that built the path. Where the path cannot be built
// (not root, no TUN, no `ip`, no `cc`), the test checks that it says why and builds nothing.
// The only duration asserted is the path's own delay bound: an invariant, not a timing guess.
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { build, type Options } from 'tsup';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import benchTsupConfig from '../../tsup.config.js';
import { createPacketPath, packetPathUnavailableReason, type PacketPath } from './netpath.js';
import { pathNamespaces, processAlive, removeStaleNamespaces } from './namespaces.js';
import { exchangeTcp, sendNumberedDatagrams } from '../../test/netpath-traffic.js';

const here = dirname(fileURLToPath(import.meta.url));
const benchDir = resolve(here, '../..');
const reason = packetPathUnavailableReason();

async function waitUntil(done: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}

function hostTunDevices(): string[] {
  return execFileSync('ip', ['-o', 'link', 'show', 'type', 'tun'], { encoding: 'utf8' })
    .split('\n')
    .map((line) => line.split(': ')[1] ?? '')
    .filter((name) => name.startsWith('qpw') || name.startsWith('qph'));
}

/** What is left of a path (its namespaces, forwarder, watchdog); empty when it is all gone. */
function leftovers(ownerPid: number, forwarderPid: number, watchdogPid: number): string[] {
  return [
    ...pathNamespaces(ownerPid).map((ns) => `namespace ${ns}`),
    ...(processAlive(forwarderPid) ? [`forwarder ${forwarderPid}`] : []),
    ...(processAlive(watchdogPid) ? [`watchdog ${watchdogPid}`] : []),
    ...hostTunDevices().map((tun) => `TUN ${tun} in the host namespace`),
  ];
}

async function withPath<T>(path: PacketPath, body: (p: PacketPath) => Promise<T>): Promise<T> {
  try {
    return await body(path);
  } finally {
    await path.close();
  }
}

// The bench as tsup bundles it (its own config: the one program and its chunks), placed where the
// bench places its private copy of dist/bin when it runs (node_modules/.cache).
let bundleDir: string | null = null;
async function bundledNetpath(): Promise<string> {
  if (bundleDir === null) {
    const config = benchTsupConfig;
    if (typeof config === 'function' || Array.isArray(config)) throw new Error('apps/bench/tsup.config.ts is expected to export one options object');
    const cache = join(benchDir, 'node_modules', '.cache');
    mkdirSync(cache, { recursive: true });
    const dir = mkdtempSync(join(cache, 'netpath-test-'));
    const options: Options = { ...config, config: false, entry: [join(benchDir, 'src/bin/quicpool-bench.ts')], outDir: dir, clean: false, sourcemap: false, silent: true, tsconfig: join(benchDir, 'tsconfig.json') };
    await build(options);
    bundleDir = dir;
  }
  return join(bundleDir, 'quicpool-bench.js');
}

afterAll(() => {
  if (bundleDir !== null) rmSync(bundleDir, { recursive: true, force: true });
});

describe('packet path: the built bench', () => {
  it('finds forwarder.c from its bundle', async () => {
    const out = execFileSync(process.execPath, [await bundledNetpath(), 'netpath', '--where'], { encoding: 'utf8' });
    const where: unknown = JSON.parse(out.trim());
    expect(where).toMatchObject({ source: realpathSync(join(here, 'forwarder.c')), unavailable: reason });
  });
});

if (reason !== null) {
  describe('packet path: unavailable here', () => {
    it('says why and creates nothing', async () => {
      expect(reason).toMatch(/root|TUN|tun|namespace|ip|cc|compiler|Linux|forwarder\.c/);
      const before = pathNamespaces();
      await expect(createPacketPath({ delayMs: 15 })).rejects.toThrow(reason);
      expect(pathNamespaces()).toEqual(before);
    });
  });
} else {
  describe('packet path', () => {
    beforeAll(() => {
      removeStaleNamespaces();
    });

    it('never releases a packet before its one-way delay, and echoes UDP byte-exact', async () => {
      const delay = { up: 12, down: 7 };
      await withPath(await createPacketPath({ delayMs: delay }), async (path) => {
        // 2,000 round trips at 800/s, sizes 16..1400 bytes, each echoed datagram compared byte for byte.
        const rtt = await path.measureRtt({ count: 2_000, ratePerSec: 800 });
        const stats = await path.stats();
        expect(rtt).toMatchObject({ sent: 2_000, received: 2_000, corrupt: 0, duplicates: 0 });
        expect(stats.up.packets).toBeGreaterThanOrEqual(2_000);
        expect(stats.down.packets).toBeGreaterThanOrEqual(2_000);
        expect(stats.up.timeInForwarderUs?.min).toBeGreaterThanOrEqual(delay.up * 1000);
        expect(stats.down.timeInForwarderUs?.min).toBeGreaterThanOrEqual(delay.down * 1000);
        expect(rtt.minMs).toBeGreaterThanOrEqual(delay.up + delay.down);
        expect(stats.up.writeErrors + stats.down.writeErrors + stats.up.queueDrops + stats.down.queueDrops).toBe(0);
      });
    });

    it('drops the configured share at random, the same packets for the same seed', async () => {
      const count = 10_000;
      const rate = 0.05;
      const first = await withPath(await createPacketPath({ delayMs: 1, lossRate: { up: rate, down: 0 }, seed: 7 }), async (path) => {
        const r = await sendNumberedDatagrams(path.clientNs, path.serverNs, path.serverIp, count, 5_000, 200, 300);
        return { ...r, stats: await path.stats() };
      });
      expect(first).toMatchObject({ sent: count, sendErrors: 0 });
      expect(first.sink).toMatchObject({ duplicates: 0, strays: 0 });
      const lost = count - first.sink.received;
      const sigma = Math.sqrt(count * rate * (1 - rate));
      expect(Math.abs(lost - count * rate)).toBeLessThanOrEqual(4 * sigma);
      // Every datagram that did not arrive was one the forwarder chose to drop, and no other.
      expect(first.sink.missing).toHaveLength(lost);
      expect(first.stats.up.randomDrops).toBe(lost);
      expect(first.stats.up.queueDrops).toBe(0);
      expect(first.stats.down.randomDrops).toBe(0);

      // The same seed on a new path drops the same datagram numbers.
      const again = await withPath(await createPacketPath({ delayMs: 1, lossRate: { up: rate, down: 0 }, seed: 7 }), (path) =>
        sendNumberedDatagrams(path.clientNs, path.serverNs, path.serverIp, 3_000, 5_000, 200, 300),
      );
      expect(again).toMatchObject({ sent: 3_000, sendErrors: 0 });
      expect(again.sink.missing).toEqual(first.sink.missing.filter((n) => n < 3_000));
    });

    it('counts tail drops of a full queue apart from random loss', async () => {
      // 1 Mbit/s and room for 40 packets: a burst of 400 x 1000 bytes overflows the queue.
      await withPath(await createPacketPath({ rateBps: { up: 1_000_000, down: 0 }, queuePackets: 40 }), async (path) => {
        const r = await sendNumberedDatagrams(path.clientNs, path.serverNs, path.serverIp, 400, 0, 1_000, 600);
        const stats = await path.stats();
        expect(r).toMatchObject({ sent: 400, sendErrors: 0 });
        expect(stats.up.queueDrops).toBeGreaterThan(0);
        expect(stats.up.randomDrops).toBe(0);
        expect(stats.up.rateWaitedPackets).toBeGreaterThan(0);
        expect(r.sink.received).toBe(400 - stats.up.queueDrops);
        expect(stats.up.maxQueued).toBeLessThanOrEqual(40);
      });
    });

    it('carries TCP byte-exact both ways while the path drops packets (retransmission end to end)', async () => {
      const bytes = 4 << 20;
      await withPath(await createPacketPath({ delayMs: 2, lossRate: 0.01, seed: 3, congestionControl: 'reno' }), async (path) => {
        expect(path.sysctls.client['net/ipv4/tcp_congestion_control']).toBe('reno');
        expect(path.sysctls.server['net/ipv4/tcp_congestion_control']).toBe('reno');
        const { client, server } = await exchangeTcp(path.clientNs, path.serverNs, path.serverIp, bytes);
        expect(client.sentBytes).toBe(bytes);
        expect(server.receivedBytes).toBe(bytes);
        expect(server.receivedSha256).toBe(client.sentSha256);
        expect(server.sentBytes).toBe(bytes);
        expect(client.receivedBytes).toBe(bytes);
        expect(client.receivedSha256).toBe(server.sentSha256);
        const stats = await path.stats();
        expect(stats.up.randomDrops).toBeGreaterThan(0);
        expect(stats.down.randomDrops).toBeGreaterThan(0);
      });
    });

    it('puts the server side on the host when asked, with the same congestion control on both routes', async () => {
      await withPath(await createPacketPath({ delayMs: 3, server: 'host', congestionControl: 'cubic' }), async (path) => {
        expect(path.serverNs).toBeNull();
        expect(pathNamespaces(process.pid)).toEqual([path.clientNs]);
        // cubic is not allowed as a namespace default here, but the routes take it.
        expect(path.routeCongestionControl).toEqual({ client: 'cubic', server: 'cubic' });
        expect(hostTunDevices()).toContain(path.serverTun);
        const rtt = await path.measureRtt({ count: 50, ratePerSec: 200 });
        expect(rtt).toMatchObject({ sent: 50, received: 50, corrupt: 0 });
        expect(rtt.minMs).toBeGreaterThanOrEqual(6);
        const { client, server } = await exchangeTcp(path.clientNs, null, path.serverIp, 1 << 20);
        expect(server.receivedSha256).toBe(client.sentSha256);
        expect(client.receivedSha256).toBe(server.sentSha256);
      });
      expect(await waitUntil(() => hostTunDevices().length === 0, 5_000)).toBe(true);
    });

    it('with lossUdpOnly drops UDP datagrams and no TCP packet', async () => {
      await withPath(await createPacketPath({ delayMs: 1, lossRate: 0.3, lossUdpOnly: true, seed: 5 }), async (path) => {
        const { client, server } = await exchangeTcp(path.clientNs, path.serverNs, path.serverIp, 256 << 10);
        expect(server.receivedSha256).toBe(client.sentSha256);
        expect((await path.stats()).up.randomDrops).toBe(0);
        const r = await sendNumberedDatagrams(path.clientNs, path.serverNs, path.serverIp, 400, 2_000, 200, 300);
        const s = await path.stats();
        expect(s.up.randomDrops).toBeGreaterThan(60);
        expect(r.sink.received + s.up.randomDrops).toBe(400);
      });
    });

    it('puts the client side on the host when asked (a benchmark whose clients run in its own process)', async () => {
      await withPath(await createPacketPath({ delayMs: 3, client: 'host' }), async (path) => {
        expect(path.clientNs).toBeNull();
        expect(pathNamespaces(process.pid)).toEqual([path.serverNs]);
        expect(hostTunDevices()).toContain(path.clientTun);
        const rtt = await path.measureRtt({ count: 50, ratePerSec: 200 });
        expect(rtt).toMatchObject({ sent: 50, received: 50, corrupt: 0 });
        expect(rtt.minMs).toBeGreaterThanOrEqual(6);
        const { client, server } = await exchangeTcp(null, path.serverNs, path.serverIp, 1 << 20);
        expect(server.receivedSha256).toBe(client.sentSha256);
        expect(client.receivedSha256).toBe(server.sentSha256);
      });
      expect(await waitUntil(() => hostTunDevices().length === 0, 5_000)).toBe(true);
      await expect(createPacketPath({ client: 'host', server: 'host' })).rejects.toThrow(/namespace on at least one side/);
    });

    it('leaves nothing behind after close(), and removes namespaces of dead owners', async () => {
      // A namespace named for a process that is gone, as a killed run without a watchdog would leave.
      const dead = spawn(process.execPath, ['-e', '']);
      await new Promise((r) => dead.once('exit', r));
      const stale = `qpwc-${dead.pid}-1`;
      execFileSync('ip', ['netns', 'add', stale]);
      const path = await createPacketPath({ delayMs: 1 });
      expect(pathNamespaces()).not.toContain(stale);
      expect(pathNamespaces(process.pid).sort()).toEqual([path.clientNs, path.serverNs].sort());
      await path.close();
      const gone = await waitUntil(() => leftovers(process.pid, path.forwarderPid, path.watchdogPid).length === 0, 5_000);
      expect(gone ? [] : leftovers(process.pid, path.forwarderPid, path.watchdogPid)).toEqual([]);
    });

    it('leaves nothing behind when the process that built it is SIGKILLed', async () => {
      const child = spawn(process.execPath, [await bundledNetpath(), 'netpath', '--hold', '--delay-ms', '5'], { stdio: ['pipe', 'pipe', 'inherit'] });
      const exited = new Promise((r) => child.once('exit', r));
      let info: { pid: number; forwarderPid: number; watchdogPid: number } | null = null;
      let gone = false;
      try {
        const line = await new Promise<string>((resolveLine, reject) => {
          const timer = setTimeout(() => reject(new Error('the --hold child did not report within 15 s')), 15_000);
          createInterface({ input: child.stdout }).once('line', (l) => {
            clearTimeout(timer);
            resolveLine(l);
          });
          child.once('exit', (code) => reject(new Error(`the --hold child exited (${code}) before it was ready`)));
        });
        const ready: unknown = JSON.parse(line);
        expect(ready).toMatchObject({ ready: true, pid: child.pid });
        info = ready as { pid: number; forwarderPid: number; watchdogPid: number };
        expect(pathNamespaces(info.pid)).toHaveLength(2);
        child.kill('SIGKILL');
        await exited;
        const { pid, forwarderPid, watchdogPid } = info;
        gone = await waitUntil(() => leftovers(pid, forwarderPid, watchdogPid).length === 0, 10_000);
        expect(gone ? [] : leftovers(pid, forwarderPid, watchdogPid)).toEqual([]);
      } finally {
        // Whatever happened above, end what this test started (the forwarder and the watchdog
        // only if they outlived the wait, so a pid the system has since reused is never hit).
        child.kill('SIGKILL');
        if (info !== null && !gone) {
          for (const pid of [info.forwarderPid, info.watchdogPid]) {
            try {
              process.kill(pid, 'SIGKILL');
            } catch {
              // gone, as it should be
            }
          }
        }
        removeStaleNamespaces();
      }
    });
  });
}
