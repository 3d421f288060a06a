// The WAN where the packet path cannot be built (no root, no TUN): the forwarder (forwarder.c) in
// relay mode, in its own process, so the delay, the seeded loss and the counters are the packet
// path's own code. It listens on 127.0.0.1 and relays to one target, one protocol per relay:
// UDP datagram by datagram (with loss), TCP read by read (never dropped; the relay terminates
// TCP, so TCP's own handshake and retransmissions run on a loopback leg, not over the delay).
import { ensureForwarderBinary } from './build.js';
import type { ForwarderStats } from './forwarder-process.js';
import { startForwarder } from './forwarder-process.js';

export interface RelayOptions {
  readonly target: { readonly host: string; readonly port: number };
  readonly protocol: 'tcp' | 'udp';
  /** One-way delay in ms, each direction. */
  readonly delayMs: number;
  /** Probability of dropping each datagram, each direction (UDP only). */
  readonly lossRate?: number;
  readonly seed?: number;
}

export type RunningRelay = Awaited<ReturnType<typeof startRelay>>;

export async function startRelay(o: RelayOptions) {
  const loss = o.lossRate ?? 0;
  if (o.protocol === 'tcp' && loss > 0) throw new Error('the relay cannot drop TCP segments: loss needs the packet path');
  const forwarder = await startForwarder({
    binary: ensureForwarderBinary(),
    ends: { kind: 'relay', protocol: o.protocol, target: o.target },
    delayMs: { up: o.delayMs, down: o.delayMs },
    loss: { up: loss, down: loss },
    seed: o.seed ?? 1,
    // A TCP relay holds what is in flight (never dropped): room for a busy WAN's 15 ms of traffic.
    queuePackets: 16_384,
    queueBytes: 32 << 20,
    // No real-time priority or locked memory for a fallback that runs without root.
    realtimePriority: 0,
  });
  const port = forwarder.ready.port;
  if (port === null) throw new Error('the relay announced no port');
  // stop() resolves with its last stats.
  return { pid: forwarder.pid, host: '127.0.0.1', port, stats: () => forwarder.stats(), stop: () => forwarder.stop() };
}

/**
 * The round trip a relay added, measured by its own counters: each direction's mean time from a
 * packet's read to its release; p99: the delay plus each direction's p99 lateness. Null before
 * any packet went both ways.
 */
export function relayRttMs(s: ForwarderStats, delayMs: number): { meanMs: number; p99Ms: number } | null {
  const { up, down } = s;
  if (up.timeInForwarderUs === null || down.timeInForwarderUs === null || up.lateUs === null || down.lateUs === null) return null;
  return {
    meanMs: (up.timeInForwarderUs.mean + down.timeInForwarderUs.mean) / 1000,
    p99Ms: 2 * delayMs + (up.lateUs.p99 + down.lateUs.p99) / 1000,
  };
}
