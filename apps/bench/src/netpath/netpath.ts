// The packet-level WAN path (README.md): the client and the server each in a network namespace of
// their own (or one side the host's), joined only through the forwarder (forwarder.c), which moves
// IP packets after a fixed one-way delay, so TCP's loss recovery runs end to end over the full RTT.
// TCP's congestion control is set on each side's route to the peer (a namespace default may only be
// one of the host's allowed list; a route takes any). Cleanup: see the README.
import { existsSync, writeFileSync } from 'node:fs';
import { orNull, readProcText } from '../telemetry/proc.js';
import { ensureForwarderBinary, forwarderBuildUnavailableReason } from './build.js';
import type { ForwarderProcess, ForwarderStats, UpDown } from './forwarder-process.js';
import { startForwarder } from './forwarder-process.js';
import { CLIENT_NS_PREFIX, SERVER_NS_PREFIX, deleteNamespace, errorText, removeStaleNamespaces, run, setSysctls } from './namespaces.js';
import type { UdpProbeOptions } from './udp-probe.js';
import { probeUdp } from './udp-probe.js';
import { startPathWatchdog } from './watchdog.js';

/** A value for both directions, or one per direction ('up' = client to server). */
export type PerDirection = number | UpDown;

/** TCP congestion control of the path's connections (set per route on both sides). */
export type CongestionControl = 'cubic' | 'bbr' | 'reno';

/** Where a side of the path lives: a namespace of its own, or the host's namespace. */
export type PathSide = 'namespace' | 'host';

export interface PacketPathOptions {
  /** One-way delay in ms. Default 0. */
  readonly delayMs?: PerDirection;
  /** Probability (0..1) of dropping each packet. Default 0. */
  readonly lossRate?: PerDirection;
  /** Drop only UDP packets (QUIC), never TCP's. Default false. */
  readonly lossUdpOnly?: boolean;
  /** Seed of the drop decisions (same seed, same packet sequence: same drops). Default 1. */
  readonly seed?: number;
  /** Bits per second; 0 (default) = unlimited. */
  readonly rateBps?: PerDirection;
  /** Packets each direction's queue holds (in flight or waiting for the rate). Default 4096. */
  readonly queuePackets?: number;
  /** TCP congestion control on both sides (routes to the peer; also the namespace default when allowed). Default 'bbr'. */
  readonly congestionControl?: CongestionControl;
  /** Default 'namespace'; at most one side may be 'host'. */
  readonly server?: PathSide;
  readonly client?: PathSide;
  /** SCHED_FIFO priority of the forwarder; 0 = normal scheduling. Default 10. */
  readonly realtimePriority?: number;
}

export type PacketPath = Awaited<ReturnType<typeof createPacketPath>>;

const MTU = 1500; // below the forwarder's 2048-byte packet slots
const TXQUEUELEN = 10_000; // the TUN's own queue in front of the forwarder: bursts wait, not drop

function split(what: string, v: PerDirection | undefined, max: number): UpDown {
  const both = typeof v === 'number' ? { up: v, down: v } : (v ?? { up: 0, down: 0 });
  for (const n of [both.up, both.down]) if (!Number.isFinite(n) || n < 0 || n > max) throw new Error(`${what} must be between 0 and ${max}, got ${n}`);
  return both;
}

/** Why the packet path cannot be built here, or null when it can (cheap checks only). */
export function packetPathUnavailableReason(): string | null {
  if (process.platform !== 'linux') return 'the packet path needs Linux (network namespaces, TUN)';
  if (typeof process.getuid === 'function' && process.getuid() !== 0) return 'the packet path needs root (network namespaces and TUN devices)';
  if (!existsSync('/dev/net/tun')) return 'no /dev/net/tun (the kernel has no TUN device, or it is not in this container)';
  if (!existsSync('/proc/self/ns/net')) return 'the kernel has no network namespaces';
  if (orNull(() => run('ip', ['-V'])) === null) return 'the `ip` tool is not installed (apt-get install iproute2)';
  return forwarderBuildUnavailableReason();
}

/** Each open path's cleanup (delete its namespaces, dismiss its watchdog): run by close(), a failed build, or at exit. */
const open = new Set<() => void>();
let sequence = 0;
// Synchronous, as 'exit' handlers cannot wait: the forwarder dies by the worker processes' own hook (or its stdin's
// EOF); the namespaces are unmounted now, freed by the kernel once it has gone.
process.on('exit', () => {
  for (const cleanUp of open) cleanUp();
});

/** A sysctl of the host's namespace (key as in /proc/sys), whitespace collapsed; null when this kernel has none. */
export const hostSysctl = (key: string): string | null => readProcText(`/proc/sys/${key}`)?.trim().replace(/\s+/g, ' ') ?? null;

function sysctlsFor(cc: CongestionControl): Record<string, string> {
  // A namespace default may only be an algorithm of the host's allowed list (EPERM otherwise).
  const allowedAsDefault = (hostSysctl('net/ipv4/tcp_allowed_congestion_control') ?? '').split(' ').includes(cc);
  return {
    // IPv4 only: no router solicitations or MLD reports on the path, so its counters count only
    // the traffic under test (and random drops hit only it).
    'net/ipv6/conf/all/disable_ipv6': '1',
    'net/ipv6/conf/default/disable_ipv6': '1',
    // The route to the peer sets the algorithm in any case; the default too when it may.
    ...(allowedAsDefault ? { 'net/ipv4/tcp_congestion_control': cc } : {}),
    // Room for a WAN's bandwidth-delay product in TCP's autotuning. (net.core.rmem_max, the cap
    // of UDP buffers, is read-only outside the host's namespace; it follows the host's value.)
    'net/ipv4/tcp_rmem': `4096 131072 ${32 << 20}`,
    'net/ipv4/tcp_wmem': `4096 16384 ${16 << 20}`,
    // Each connection starts from scratch, not from what an earlier run's connections learned.
    'net/ipv4/tcp_no_metrics_save': '1',
  };
}

/** Sets the sysctls in `ns` and returns them as read back; the host's (ns null) are only read, never set. */
function applySysctls(ns: string | null, cc: CongestionControl): Record<string, string> {
  if (ns === null) {
    const entries = Object.keys(sysctlsFor('bbr')).map((key) => [key, hostSysctl(key)] as const);
    return Object.fromEntries(entries.filter((entry): entry is readonly [string, string] => entry[1] !== null));
  }
  const wanted = sysctlsFor(cc);
  let read: Record<string, string>;
  try {
    read = setSysctls(ns, wanted);
  } catch (error) {
    const allowed = hostSysctl('net/ipv4/tcp_allowed_congestion_control') ?? '?';
    throw new Error(`sysctls in ${ns} failed (tcp_congestion_control ${cc}; allowed here: ${allowed}): ${errorText(error)}`);
  }
  if (wanted['net/ipv4/tcp_congestion_control'] !== undefined && read['net/ipv4/tcp_congestion_control'] !== cc) {
    throw new Error(`${ns}: tcp_congestion_control reads ${read['net/ipv4/tcp_congestion_control'] ?? '?'} after setting ${cc}`);
  }
  return read;
}

// One end of the path: its namespace (null: the host's), TUN and address; a host TUN's name carries our pid (no clash).
function pathSide(where: PathSide | undefined, prefix: string, hostTun: string, ip: string) {
  return {
    ns: where === 'host' ? null : `${prefix}-${process.pid}-${sequence}`,
    tun: where === 'host' ? `${hostTun}${process.pid}-${sequence}` : `${prefix}${sequence}`,
    ip,
  };
}

type Side = ReturnType<typeof pathSide>;

/** Addresses, links and the route to the peer with its congestion control, in one `ip -batch`; returns the route's congctl. */
function configureLinks({ ns, tun, ip }: Side, peer: string, cc: CongestionControl): string {
  const where = ns === null ? [] : ['-n', ns];
  // No IPv6 on a host-side TUN either (the host's defaults are left alone; this device is ours).
  if (ns === null) writeFileSync(`/proc/sys/net/ipv6/conf/${tun}/disable_ipv6`, '1');
  const commands = [
    ...(ns === null ? [] : ['link set dev lo up']),
    `addr add ${ip}/32 peer ${peer}/32 dev ${tun}`,
    `link set dev ${tun} mtu ${MTU} txqueuelen ${TXQUEUELEN} up`,
    `route replace ${peer}/32 dev ${tun} src ${ip} congctl ${cc}`,
  ];
  run('ip', [...where, '-batch', '-'], `${commands.join('\n')}\n`);
  // Connections to this peer start from scratch, not from what an earlier one learned (it fails when none did).
  orNull(() => run('ip', [...where, 'tcp_metrics', 'delete', peer]));
  const route = run('ip', [...where, 'route', 'show', `${peer}/32`]);
  return /congctl (?:lock )?(\S+)/.exec(route)?.[1] ?? '?';
}

/** A /24 under 10.201 whose .1 and .2 the host does not use yet (the host-side TUN shares its address space). */
function freeHostSubnet(start: number): number {
  const used = orNull(() => run('ip', ['-4', '-o', 'addr', 'show'])) ?? ''; // unreadable: take the first guess
  for (let i = 0; i < 254; i++) {
    const subnet = ((start + i) % 254) + 1;
    if (!used.includes(`10.201.${subnet}.1/`) && !used.includes(`10.201.${subnet}.2/`) && !used.includes(`10.201.${subnet}.1 `)) return subnet;
  }
  throw new Error('no free 10.201.x.0/24 left on the host for a packet path');
}

export async function createPacketPath(o: PacketPathOptions = {}) {
  const reason = packetPathUnavailableReason();
  if (reason !== null) throw new Error(reason);
  const delay = split('delayMs', o.delayMs, 60_000);
  const loss = split('lossRate', o.lossRate, 1);
  const rate = split('rateBps', o.rateBps, 1e12);
  const seed = o.seed ?? 1;
  if (!Number.isSafeInteger(seed) || seed < 0) throw new Error(`seed must be a non-negative integer, got ${seed}`);
  const binary = ensureForwarderBinary();
  removeStaleNamespaces();
  sequence += 1;
  if (o.client === 'host' && o.server === 'host') throw new Error('a packet path needs a namespace on at least one side');
  const subnet = o.client === 'host' || o.server === 'host' ? freeHostSubnet(process.pid + sequence) : ((sequence - 1) % 254) + 1;
  const client = pathSide(o.client, CLIENT_NS_PREFIX, 'qphc', `10.201.${subnet}.2`);
  const server = pathSide(o.server, SERVER_NS_PREFIX, 'qph', `10.201.${subnet}.1`);
  const cc = o.congestionControl ?? 'bbr';
  // The watchdog first, so that no moment exists in which a namespace is unguarded.
  const namespaces = [client.ns, server.ns].filter((ns): ns is string => ns !== null);
  const watchdog = startPathWatchdog(namespaces);
  const cleanUp = (): void => {
    for (const ns of namespaces) deleteNamespace(ns);
    watchdog.done();
    open.delete(cleanUp);
  };
  open.add(cleanUp);
  let forwarder: ForwarderProcess | null = null;
  let sysctls: { client: Record<string, string>; server: Record<string, string> };
  let routeCc: { client: string; server: string };
  try {
    for (const ns of namespaces) run('ip', ['netns', 'add', ns]);
    // Before the forwarder creates the TUNs: they take the namespace's defaults (IPv6 off).
    sysctls = { client: applySysctls(client.ns, cc), server: applySysctls(server.ns, cc) };
    // The forwarder lives in the host's namespace: its own namespace file is the host's.
    const nsFile = (s: Side): string => s.ns ?? '/proc/self/ns/net';
    forwarder = await startForwarder({
      binary,
      ends: { kind: 'tun', clientNs: nsFile(client), clientTun: client.tun, serverNs: nsFile(server), serverTun: server.tun },
      delayMs: delay,
      loss,
      lossUdpOnly: o.lossUdpOnly ?? false,
      seed,
      rateBps: rate,
      queuePackets: o.queuePackets,
      realtimePriority: o.realtimePriority ?? 10,
    });
    watchdog.forwarder(forwarder.pid, binary);
    routeCc = { client: configureLinks(client, server.ip, cc), server: configureLinks(server, client.ip, cc) };
  } catch (error) {
    await forwarder?.stop();
    cleanUp();
    throw new Error(`could not build the packet path: ${errorText(error)}`);
  }
  const running = forwarder;
  const rateText = (bps: number): string => (bps === 0 ? 'unlimited' : `${bps / 1e6} Mbit/s`);
  let closing: Promise<ForwarderStats | null> | null = null;
  return {
    /** null: that side is the host's own namespace. */
    clientNs: client.ns,
    serverNs: server.ns,
    /** The server's address (in serverNs): the client reaches it only through the path. */
    serverIp: server.ip,
    clientTun: client.tun,
    serverTun: server.tun,
    forwarderPid: running.pid,
    /** The detached process that cleans up if we die without close(); it exits after close() too. */
    watchdogPid: watchdog.pid,
    configured: { upDelayMs: delay.up, downDelayMs: delay.down, upLoss: loss.up, downLoss: loss.down, upRateBps: rate.up, downRateBps: rate.down, seed },
    /** The sysctls set in each namespace, as read back afterwards (the host's are only read, never set). */
    sysctls,
    /** The congestion control on each side's route to the peer, as `ip route` reads it back. */
    routeCongestionControl: routeCc,
    /** One line for a report: what was configured and how the forwarder runs. */
    description:
      `packet path ${client.ns ?? 'host'} (${client.ip}) <-> ${server.ns ?? 'host'} (${server.ip}) through a TUN forwarder: ` +
      `delay ${delay.up}/${delay.down} ms, loss ${loss.up}/${loss.down}${o.lossUdpOnly === true ? ' (UDP only)' : ''} (seed ${seed}), ` +
      `rate ${rateText(rate.up)}/${rateText(rate.down)} (up/down); ` +
      `tcp congctl ${routeCc.client}/${routeCc.server} (client/server routes); ` +
      `forwarder sched ${running.ready.sched}, mlock ${running.ready.mlock}`,
    stats: () => running.stats(),
    /** Round trips with UDP through the path (an echo in serverNs, a prober in clientNs). */
    measureRtt: (probe?: UdpProbeOptions) => probeUdp(client.ns, server.ns, server.ip, probe),
    /** Stops the forwarder and deletes both namespaces; resolves with the forwarder's last stats. */
    close(): Promise<ForwarderStats | null> {
      closing ??= running.stop().then((last) => {
        cleanUp();
        return last;
      });
      return closing;
    },
  };
}
