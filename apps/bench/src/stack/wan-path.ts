// The WAN between a benchmark's clients and the quicpool daemon, for one run (docs/benchmark.md,
// "Topology"): as root the packet path, its client side a namespace of its own when the clients are
// processes of their own (the scenarios), or the host when they run in this process (connect,
// client, soak: the daemon then in the server namespace); else the relay, which terminates TCP and
// so cannot drop TCP segments. choosePathMode() decides, once per run, and says so.
import { choiceOption } from '../command-line.js';
import type { CongestionControl } from '../netpath/netpath.js';
import { forwarderBuildUnavailableReason } from '../netpath/build.js';
import { createPacketPath, packetPathUnavailableReason } from '../netpath/netpath.js';
import type { PathFacts } from '../scenarios/types.js';
import type { RunningRelay } from '../netpath/relay.js';
import { relayRtt, startRelay } from '../netpath/relay.js';

export type PathMode = 'packet' | 'relay';

/** The `--path` option of every benchmark that has distance: auto (the packet path where it can be built), packet or relay. */
export const PATH_OPTION = { path: { type: 'string', default: 'auto' } } as const;

export const pathOption = (value: string): PathMode | 'auto' => choiceOption('path', value, ['auto', 'packet', 'relay'] as const);

/** Where the clients run: processes of their own (inside the client namespace), or this process. */
export type ClientSide = 'process' | 'here';

/** `auto`: the packet path where it can be built, else the relay (the reason logged); `packet` where it cannot be is an error. */
export function choosePathMode(requested: PathMode | 'auto', log: (line: string) => void): { mode: PathMode; fallback: string | null } {
  // The relay is the same forwarder: without a C compiler there is no WAN at all.
  const noForwarder = forwarderBuildUnavailableReason();
  if (noForwarder !== null) throw new Error(`no WAN path can be built here (neither the packet path nor the relay): ${noForwarder}`);
  const unavailable = packetPathUnavailableReason();
  const mode: PathMode = requested === 'auto' ? (unavailable === null ? 'packet' : 'relay') : requested;
  if (mode === 'packet' && unavailable !== null) throw new Error(`--path packet: ${unavailable}`);
  const fallback = mode === 'relay' ? (unavailable ?? 'asked for with --path relay') : null;
  if (fallback !== null) log(`WAN: the user-space relay, not the packet path: ${fallback}`);
  return { mode, fallback };
}

export interface WanSpec {
  readonly delayMs: number;
  readonly lossRate: number;
  /** Loss for UDP (QUIC) only: TCP crosses whole, as on the relay. Default false. */
  readonly lossUdpOnly?: boolean;
  /** The same seed for every variant: the same packet sequence meets the same drops. */
  readonly seed: number;
  readonly congestionControl: CongestionControl;
}

export interface VariantPath {
  readonly mode: PathMode | 'none';
  /** One line for a report: what the path is (facts() measures it). */
  readonly description: string;
  /** Where the daemon must listen to be reached only through the path. */
  readonly serverHost: string;
  /** The network namespace the daemon must run in (null: the host's), and so reach Postgres by its unix socket. */
  readonly serverNs: string | null;
  /** The client process's command: inside the client namespace on the packet path. */
  clientCommand(args: readonly string[]): { command: string; args: string[] };
  /** Where the client connects to reach the daemon's `port` (on the relay, a relay for it starts here). */
  endpoint(protocol: 'tcp' | 'udp', port: number): Promise<{ host: string; port: number }>;
  /** The process that moves the packets (forwarder, or the first relay), for its CPU; null before endpoint() on the relay. */
  forwarderPid(): number | null;
  /** The RTT through the path and what the path saw; call once the load is over. */
  facts(): Promise<PathFacts>;
  close(): Promise<void>;
}

/** RTT probes: enough for a p50/p99 (100 round trips at 250/s: 0.4 s). */
const PROBES = { count: 100, ratePerSec: 250 };

/** No path at all: the client talks to Postgres on the host directly. */
export const NO_PATH: VariantPath = {
  mode: 'none',
  description: 'none: straight to Postgres on the host',
  serverHost: '127.0.0.1',
  serverNs: null,
  clientCommand: (args) => ({ command: process.execPath, args: [...args] }),
  endpoint: async (_protocol, port) => ({ host: '127.0.0.1', port }),
  forwarderPid: () => null,
  facts: async () => ({ mode: 'none', rttMs: null, rttP99Ms: null, randomDrops: null, queueDrops: null, lateP99Us: null, forwarderSched: null, description: 'none: straight to Postgres on the host' }),
  close: async () => undefined,
};

async function packetPath(spec: WanSpec, clients: ClientSide): Promise<VariantPath> {
  const path = await createPacketPath({ ...spec, ...(clients === 'process' ? { server: 'host' } : { client: 'host' }) });
  const clientNs = path.clientNs;
  return {
    mode: 'packet',
    description: path.description,
    serverHost: path.serverIp,
    serverNs: path.serverNs,
    clientCommand: (args) =>
      clientNs === null ? NO_PATH.clientCommand(args) : { command: 'ip', args: ['netns', 'exec', clientNs, process.execPath, ...args] },
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
    // path.close() runs once: a second call gets the first one's promise.
    close: () => path.close().then(() => undefined),
  };
}

function relayPath(spec: WanSpec): VariantPath {
  if (spec.lossRate > 0 && spec.lossUdpOnly !== true) throw new Error('the relay cannot drop TCP segments: loss needs the packet path');
  // One relay per daemon port the clients reach (a relay serves one protocol and one target).
  const relays = new Map<string, Promise<RunningRelay>>();
  const started: RunningRelay[] = [];
  return {
    // On the host like no path at all; each relay's port is where the clients connect.
    ...NO_PATH,
    mode: 'relay',
    description: `user-space relay (the packet path's forwarder between sockets; terminates TCP), ${spec.delayMs} ms each way`,
    endpoint: async (protocol, port) => {
      const key = `${protocol}:${port}`;
      let relay = relays.get(key);
      if (relay === undefined) {
        relay = startRelay({ target: { host: '127.0.0.1', port }, protocol, delayMs: spec.delayMs, lossRate: protocol === 'udp' ? spec.lossRate : 0, seed: spec.seed });
        relays.set(key, relay);
        started.push(await relay);
      }
      const r = await relay;
      return { host: r.host, port: r.port };
    },
    forwarderPid: () => started[0]?.pid ?? null,
    facts: async () => {
      const rtt = await relayRtt(spec.delayMs, PROBES);
      const stats = await Promise.all(started.map((r) => r.stats()));
      const sum = (pick: (s: (typeof stats)[number]) => number): number => stats.reduce((n, s) => n + pick(s), 0);
      return {
        mode: 'relay',
        rttMs: rtt.p50Ms,
        rttP99Ms: rtt.p99Ms,
        randomDrops: [sum((s) => s.up.randomDrops), sum((s) => s.down.randomDrops)],
        // A datagram too large for a slot (2 KiB) is dropped too: counted here.
        queueDrops: sum((s) => s.up.queueDrops + s.down.queueDrops + s.up.oversizeDrops + s.down.oversizeDrops),
        lateP99Us: null,
        forwarderSched: null,
        description: `user-space relay (the packet path's forwarder between sockets; terminates TCP), ${spec.delayMs} ms each way, RTT from UDP probes through a relay of its own`,
      };
    },
    close: async () => {
      // Every relay, also one still starting, and the others when one fails to stop.
      await Promise.allSettled([...relays.values()].map((r) => r.then((relay) => relay.stop())));
    },
  };
}

export async function openPath(mode: PathMode, spec: WanSpec, clients: ClientSide = 'process'): Promise<VariantPath> {
  return mode === 'packet' ? packetPath(spec, clients) : relayPath(spec);
}

/** The WAN of a benchmark whose clients run in this process (connect, client, soak), with the usual seed and congestion control. */
export async function openPathHere(requested: PathMode | 'auto', spec: Pick<WanSpec, 'delayMs'> & Partial<WanSpec>, log: (line: string) => void): Promise<VariantPath> {
  return openPath(choosePathMode(requested, log).mode, { lossRate: 0, seed: 1, congestionControl: 'cubic', ...spec }, 'here');
}

/** Where a daemon behind `path` runs and listens; it reaches Postgres by loopback from the host, by its unix socket from a namespace. */
export function daemonBehind(path: VariantPath, pg: { readonly host: string; readonly port: number; readonly socketDir: string }) {
  return {
    listenHost: path.serverHost,
    namespace: path.serverNs,
    upstream: { host: path.serverNs === null ? pg.host : pg.socketDir, port: pg.port },
  };
}
