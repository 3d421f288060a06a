// The WAN where the packet path cannot be built (no root, no TUN): forwarder.c in relay mode, so the
// delay, seeded loss and counters are the packet path's own. One protocol and target per relay, on
// 127.0.0.1: UDP datagram by datagram (with loss), TCP read by read (never dropped; it terminates
// TCP, so TCP's handshake and retransmissions run on a loopback leg, not over the delay).
import { ensureForwarderBinary } from './build.js';
import { startForwarder } from './forwarder-process.js';
import { probeUdp } from './udp-probe.js';
import type { UdpProbeOptions, UdpProbeResult } from './udp-probe.js';

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
    // Room for a busy WAN's 15 ms of traffic; a TCP connection that would overflow it waits.
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

/** The round trip through a relay of `delayMs`, measured as on the packet path: UDP probes through a relay of its own. */
export async function relayRtt(delayMs: number, probes: UdpProbeOptions): Promise<UdpProbeResult> {
  const relays: RunningRelay[] = [];
  try {
    return await probeUdp(null, null, '127.0.0.1', probes, async (echo) => {
      const relay = await startRelay({ target: echo, protocol: 'udp', delayMs });
      relays.push(relay);
      return { host: relay.host, port: relay.port };
    });
  } finally {
    for (const relay of relays) await relay.stop();
  }
}
