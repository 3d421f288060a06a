// The WAN between a variant's client and the quicpool daemon, for one run. As root with TUN: the
// packet path (the client process in a namespace of its own, the daemon and Postgres on the host,
// one forwarder moving IP packets between them after the delay, with seeded random loss), so
// TCP's own loss recovery runs over the full RTT. Otherwise: the old user-space relay, which
// terminates TCP (its retransmissions then run on a ~0.1 ms loopback leg) and cannot drop TCP
// segments at all, so loss scenarios cannot run on it; the report says which one was used.
import type { CongestionControl } from '../netpath/netpath.js';
import { createPacketPath } from '../netpath/netpath.js';
import type { PathFacts } from '../scenarios/types.js';
import type { RunningRelay } from './relay.js';
import { startRelay } from './relay.js';

export type PathMode = 'packet' | 'relay';

export interface WanSpec {
  readonly delayMs: number;
  readonly lossRate: number;
  /** The same seed for every variant: the same packet sequence meets the same drops. */
  readonly seed: number;
  readonly congestionControl: CongestionControl;
}

export interface VariantPath {
  readonly mode: PathMode | 'none';
  /** Where the daemon must listen to be reached only through the path. */
  readonly serverHost: string;
  /** The client process's command: inside the client namespace on the packet path. */
  clientCommand(args: readonly string[]): { command: string; args: string[] };
  /** Where the client connects to reach the daemon's `port` (the relay starts here). */
  endpoint(protocol: 'tcp' | 'udp', port: number): Promise<{ host: string; port: number }>;
  /** The process that moves the packets (forwarder or relay), for its CPU; null before endpoint() on the relay. */
  forwarderPid(): number | null;
  /** The RTT through the path and what the path saw; call once the load is over. */
  facts(): Promise<PathFacts>;
  close(): Promise<void>;
}

/** RTT probes: enough for a p50/p99 (100 round trips at 250/s: 0.4 s). */
const PROBES = { count: 100, ratePerSec: 250 };

async function packetPath(spec: WanSpec): Promise<VariantPath> {
  const path = await createPacketPath({
    delayMs: spec.delayMs,
    lossRate: spec.lossRate,
    seed: spec.seed,
    congestionControl: spec.congestionControl,
    server: 'host',
  });
  let closed = false;
  return {
    mode: 'packet',
    serverHost: path.serverIp,
    clientCommand: (args) => ({ command: 'ip', args: ['netns', 'exec', path.clientNs, process.execPath, ...args] }),
    endpoint: async (_protocol, port) => ({ host: path.serverIp, port }),
    forwarderPid: () => path.forwarderPid,
    facts: async () => {
      const rtt = await path.measureRtt(PROBES);
      const s = await path.stats();
      return {
        mode: 'packet',
        rttMs: rtt.p50Ms,
        rttP99Ms: rtt.p99Ms,
        // The probe's own datagrams are in the counters too (100 each way): a negligible share.
        randomDrops: [s.up.randomDrops, s.down.randomDrops],
        queueDrops: s.up.queueDrops + s.down.queueDrops,
        lateP99Us: Math.max(s.up.lateUs?.p99 ?? 0, s.down.lateUs?.p99 ?? 0),
        forwarderSched: s.sched,
        description: path.description,
      };
    },
    close: async () => {
      if (closed) return;
      closed = true;
      await path.close();
    },
  };
}

function relayPath(spec: WanSpec, program: string): VariantPath {
  if (spec.lossRate > 0) throw new Error('the relay cannot drop TCP segments: loss needs the packet path');
  let relay: RunningRelay | null = null;
  return {
    mode: 'relay',
    serverHost: '127.0.0.1',
    clientCommand: (args) => ({ command: process.execPath, args: [...args] }),
    endpoint: async (protocol, port) => {
      relay ??= await startRelay(program, { host: '127.0.0.1', port }, protocol, spec.delayMs);
      return { host: relay.host, port: relay.port };
    },
    forwarderPid: () => relay?.pid ?? null,
    facts: async () => ({
      mode: 'relay',
      rttMs: relay?.measuredRtt?.medianMs ?? null,
      rttP99Ms: relay?.measuredRtt?.p99Ms ?? null,
      randomDrops: null,
      queueDrops: null,
      lateP99Us: null,
      forwarderSched: null,
      description: `user-space relay (terminates TCP), ${spec.delayMs} ms each way, RTT from its own probe through both delay lines`,
    }),
    close: async () => {
      await relay?.stop();
    },
  };
}

export async function openPath(mode: PathMode, spec: WanSpec, program: string): Promise<VariantPath> {
  return mode === 'packet' ? packetPath(spec) : relayPath(spec, program);
}

/** No path at all: the client talks to Postgres on the host directly. */
export const NO_PATH: VariantPath = {
  mode: 'none',
  serverHost: '127.0.0.1',
  clientCommand: (args) => ({ command: process.execPath, args: [...args] }),
  endpoint: async (_protocol, port) => ({ host: '127.0.0.1', port }),
  forwarderPid: () => null,
  facts: async () => ({ mode: 'none', rttMs: null, rttP99Ms: null, randomDrops: null, queueDrops: null, lateP99Us: null, forwarderSched: null, description: 'none: straight to Postgres on the host' }),
  close: async () => undefined,
};
