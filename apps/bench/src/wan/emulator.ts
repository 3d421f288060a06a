// The WAN emulator: one process-local relay from a listen port to a target, adding a one-way delay
// per direction (and random loss for UDP), for TCP, UDP or both on the same port number. It
// measures what it achieves (a probe through both delay lines at start, plus counters) because
// benchmarks must report the RTT they measured, not the one they configured.
import { performance } from 'node:perf_hooks';
import type { DelayLineStats, Sink } from './delay-line.js';
import { seededRandom } from '@quicpool/pg-fixture';
import { DelayLine } from './delay-line.js';
import type { TcpRelay, TcpSegment } from './tcp-relay.js';
import { createTcpRelay, deliverTcp } from './tcp-relay.js';
import type { UdpDatagram, UdpRelay } from './udp-relay.js';
import { boundPort, createUdpRelay, deliverUdp } from './udp-relay.js';

export type WanProtocol = 'tcp' | 'udp' | 'both';

/** A value for both directions, or one per direction ('up' = client to target). */
export type PerDirection = number | { up: number; down: number };

export interface WanEmulatorOptions {
  /** Default '127.0.0.1'. */
  listenHost?: string;
  /** Default 0 (a free port; with 'both', TCP and UDP share the number). */
  listenPort?: number;
  targetHost: string;
  targetPort: number;
  /** Default 'both'. */
  protocol?: WanProtocol;
  /** One-way delay in ms. Default 0. */
  delayMs?: PerDirection;
  /** Probability (0..1) of dropping each UDP datagram. Default 0. TCP is never dropped. */
  lossRate?: PerDirection;
  /** Seed of the loss decisions. Default 1. */
  seed?: number;
  /** Bound of each direction's queue. Default 200 000 items / 256 MB. */
  maxQueueItems?: number;
  maxQueueBytes?: number;
  /** Close a UDP client's upstream socket after this long without traffic. Default 30 000 ms. */
  udpIdleMs?: number;
  /** Most distinct UDP clients at once. Default 10 000. */
  maxUdpPeers?: number;
  /** Probes sent through both lines at start to measure the RTT achieved. Default 20; 0 skips. */
  calibrationProbes?: number;
}

export interface RttMeasurement {
  samples: number;
  minMs: number;
  medianMs: number;
  p99Ms: number;
  meanMs: number;
}

export interface WanStats {
  protocol: WanProtocol;
  configured: { upMs: number; downMs: number; lossUp: number; lossDown: number };
  /** The emulator's own added round trip, measured at start (null if skipped). */
  measuredRtt: RttMeasurement | null;
  up: DelayLineStats;
  down: DelayLineStats;
  tcpConnections: number;
  udpPeers: number;
  udp: { lostUp: number; lostDown: number; peersRefused: number; peersExpired: number };
}

export interface WanEmulator {
  readonly host: string;
  readonly port: number;
  stats(): WanStats;
  /** Sends `samples` probes through both delay lines (no sockets) and reports the round trip. */
  measureRtt(samples?: number): Promise<RttMeasurement>;
  close(): Promise<void>;
}

/** A probe or a real item: the lines carry both, so probes see the same queueing as traffic. */
type Item = { kind: 'tcp'; segment: TcpSegment } | { kind: 'udp'; datagram: UdpDatagram } | { kind: 'probe'; done: () => void };

function split(value: PerDirection | undefined, fallback: number): { up: number; down: number } {
  if (value === undefined) return { up: fallback, down: fallback };
  return typeof value === 'number' ? { up: value, down: value } : value;
}

export async function startWanEmulator(options: WanEmulatorOptions): Promise<WanEmulator> {
  const protocol = options.protocol ?? 'both';
  const host = options.listenHost ?? '127.0.0.1';
  const delay = split(options.delayMs, 0);
  const loss = split(options.lossRate, 0);
  const lineOptions = (delayMs: number) => ({
    delayMs,
    maxItems: options.maxQueueItems ?? 200_000,
    maxBytes: options.maxQueueBytes ?? 256 * 1024 * 1024,
  });
  const deliver = (item: Item): void => {
    if (item.kind === 'tcp') deliverTcp(item.segment);
    else if (item.kind === 'udp') deliverUdp(item.datagram);
    else item.done();
  };
  const up = new DelayLine<Item>(lineOptions(delay.up), deliver);
  const down = new DelayLine<Item>(lineOptions(delay.down), deliver);

  // The relays speak their own item types; adapt them onto the shared lines.
  const tcpUp: Sink<TcpSegment> = { push: (segment: TcpSegment, size: number) => up.push({ kind: 'tcp', segment }, size) };
  const tcpDown: Sink<TcpSegment> = { push: (segment: TcpSegment, size: number) => down.push({ kind: 'tcp', segment }, size) };
  const udpUp: Sink<UdpDatagram> = { push: (datagram: UdpDatagram, size: number) => up.push({ kind: 'udp', datagram }, size) };
  const udpDown: Sink<UdpDatagram> = { push: (datagram: UdpDatagram, size: number) => down.push({ kind: 'udp', datagram }, size) };

  // One generator per direction, so each direction's drops depend only on its own traffic.
  const randomUp = seededRandom(options.seed ?? 1);
  const randomDown = seededRandom((options.seed ?? 1) ^ 0x5bd1e995);
  const target = { host: options.targetHost, port: options.targetPort };
  let tcp: TcpRelay | null = null;
  let udp: UdpRelay | null = null;
  let port = options.listenPort ?? 0;

  const udpOptions = {
    target,
    up: udpUp,
    down: udpDown,
    lossUp: () => loss.up > 0 && randomUp() < loss.up,
    lossDown: () => loss.down > 0 && randomDown() < loss.down,
    idleMs: options.udpIdleMs ?? 30_000,
    maxPeers: options.maxUdpPeers ?? 10_000,
  };
  // With 'both' and port 0, TCP picks the number and UDP must get the same one; if that UDP port
  // happens to be taken, start over with another.
  for (let attempt = 1; ; attempt++) {
    try {
      if (protocol !== 'udp') {
        tcp = createTcpRelay(target, tcpUp, tcpDown);
        port = await listenTcp(tcp, host, options.listenPort ?? 0);
      }
      if (protocol !== 'tcp') {
        udp = await createUdpRelay(host, port, udpOptions);
        port = boundPort(udp.socket);
      }
      break;
    } catch (error) {
      await tcp?.close();
      tcp = null;
      if (attempt >= 10 || (options.listenPort ?? 0) !== 0) throw error;
    }
  }

  const measureRtt = async (samples = 20): Promise<RttMeasurement> => {
    // Probes start 1 ms apart so they sample the timer phase rather than share one wake-up.
    const times = await Promise.all(
      Array.from({ length: samples }, (_, i) =>
        new Promise<void>((resolve) => setTimeout(resolve, i)).then(
          () =>
            new Promise<number>((resolve) => {
              const start = performance.now();
              up.push({ kind: 'probe', done: () => down.push({ kind: 'probe', done: () => resolve(performance.now() - start) }, 0) }, 0);
            }),
        ),
      ),
    );
    return summarize(times);
  };

  const probes = options.calibrationProbes ?? 20;
  // A first round warms up (JIT, and the lines' lateness estimates); the second one is reported.
  if (probes > 0) await measureRtt(Math.min(probes, 10));
  const measuredRtt = probes > 0 ? await measureRtt(probes) : null;

  return {
    host,
    port,
    measureRtt,
    stats: () => ({
      protocol,
      configured: { upMs: delay.up, downMs: delay.down, lossUp: loss.up, lossDown: loss.down },
      measuredRtt,
      up: up.stats(),
      down: down.stats(),
      tcpConnections: tcp?.connections() ?? 0,
      udpPeers: udp?.peers() ?? 0,
      udp: udp?.counters ?? { lostUp: 0, lostDown: 0, peersRefused: 0, peersExpired: 0 },
    }),
    close: async () => {
      up.close();
      down.close();
      await Promise.all([tcp?.close(), udp?.close()]);
    },
  };
}

function listenTcp(relay: TcpRelay, host: string, port: number): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    relay.server.once('error', reject);
    relay.server.listen(port, host, () => {
      relay.server.off('error', reject);
      const address = relay.server.address();
      resolve(typeof address === 'object' && address !== null ? address.port : port);
    });
  });
}

export function summarize(times: number[]): RttMeasurement {
  const sorted = [...times].sort((a, b) => a - b);
  const at = (q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  const us = (ms: number): number => Math.round(ms * 1000) / 1000; // µs resolution is plenty
  return {
    samples: sorted.length,
    minMs: us(sorted[0] ?? 0),
    medianMs: us(at(0.5)),
    p99Ms: us(at(0.99)),
    meanMs: us(sorted.reduce((sum, t) => sum + t, 0) / Math.max(1, sorted.length)),
  };
}
