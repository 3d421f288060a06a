// `quicpool-bench netpath` (`pnpm bench:netpath`): the packet-level WAN path on its own: builds
// one, measures the RTT it gives with UDP round trips, then the forwarder's CPU per packet under a
// light load, and removes it again. The RTT is reported twice: as Node's UDP endpoints see it (what
// the bench's processes get) and as the forwarder's own clock sees it (the path alone).
// Two more modes, used by its tests:
//   --where   prints {"source": <forwarder.c as found from this file>, "unavailable": <reason or null>}
//   --hold    builds a path, prints {"ready":true,...names and pids...} and keeps it until SIGTERM,
//             SIGINT or EOF on stdin (the test SIGKILLs it to check the watchdog's cleanup)
import { choiceOption, defineCommand, JSON_OPTION, numberOption } from '../command-line.js';
import type { Values } from '../command-line.js';
import { forwarderSourcePath } from '../netpath/build.js';
import type { ForwarderStats } from '../netpath/forwarder-process.js';
import type { PacketPath } from '../netpath/netpath.js';
import { createPacketPath, packetPathUnavailableReason } from '../netpath/netpath.js';
import type { UdpProbeResult } from '../netpath/udp-probe.js';

const OPTIONS = {
  'delay-ms': { type: 'string', default: '15' },
  'delay-down-ms': { type: 'string' },
  loss: { type: 'string', default: '0' },
  cc: { type: 'string', default: 'bbr' },
  'realtime-priority': { type: 'string', default: '10' },
  probes: { type: 'string', default: '200' },
  'probe-rate': { type: 'string', default: '100' },
  'load-pps': { type: 'string', default: '4000' },
  'load-seconds': { type: 'string', default: '3' },
  ...JSON_OPTION,
  where: { type: 'boolean', default: false },
  hold: { type: 'boolean', default: false },
} as const;

const ms = (v: number): string => v.toFixed(2);

function rttLine(label: string, r: UdpProbeResult): string {
  return `${label}: ${r.received}/${r.sent} echoed, min ${ms(r.minMs)} mean ${ms(r.meanMs)} p50 ${ms(r.p50Ms)} p99 ${ms(r.p99Ms)} max ${ms(r.maxMs)} mdev ${r.mdevMs.toFixed(3)} ms`;
}

function cpuUs(s: ForwarderStats): number {
  return s.cpuUserUs + s.cpuSysUs;
}

function packets(s: ForwarderStats): number {
  return s.up.packets + s.down.packets + s.up.randomDrops + s.down.randomDrops + s.up.queueDrops + s.down.queueDrops;
}

async function hold(values: Values<typeof OPTIONS>): Promise<null> {
  const path = await createPacketPath({ delayMs: numberOption('delay-ms', values['delay-ms']) });
  const { clientNs, serverNs, forwarderPid, watchdogPid } = path;
  process.stdout.write(`${JSON.stringify({ ready: true, pid: process.pid, clientNs, serverNs, forwarderPid, watchdogPid })}\n`);
  const stop = (): void => {
    void path.close().then(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  process.stdin.once('end', stop);
  process.stdin.resume();
  return null;
}

async function measure(values: Values<typeof OPTIONS>): Promise<number> {
  const up = numberOption('delay-ms', values['delay-ms']);
  const down = values['delay-down-ms'] === undefined ? up : numberOption('delay-down-ms', values['delay-down-ms']);
  // Set per route on both sides.
  const cc = choiceOption('cc', values.cc, ['cubic', 'bbr', 'reno'] as const);
  const loadPps = numberOption('load-pps', values['load-pps']);
  const loadSeconds = numberOption('load-seconds', values['load-seconds']);
  const path: PacketPath = await createPacketPath({
    delayMs: { up, down },
    lossRate: numberOption('loss', values.loss),
    congestionControl: cc,
    realtimePriority: numberOption('realtime-priority', values['realtime-priority']),
  });
  try {
    process.stdout.write(`${path.description}\n`);
    const rtt = await path.measureRtt({ count: numberOption('probes', values.probes), ratePerSec: numberOption('probe-rate', values['probe-rate']), size: 64 });
    const before = await path.stats();
    const pathRttMs = ((before.up.timeInForwarderUs?.mean ?? 0) + (before.down.timeInForwarderUs?.mean ?? 0)) / 1000;
    process.stdout.write(`${rttLine(`RTT (configured ${up + down} ms)`, rtt)}\n`);
    process.stdout.write(`path alone (forwarder's clock): mean ${pathRttMs.toFixed(3)} ms (up late p50/p99 ${before.up.lateUs?.p50 ?? '-'}/${before.up.lateUs?.p99 ?? '-'} µs, down ${before.down.lateUs?.p50 ?? '-'}/${before.down.lateUs?.p99 ?? '-'} µs)\n`);
    // Each round trip is two packets through the forwarder, one per direction.
    const roundTrips = Math.round((loadPps / 2) * loadSeconds);
    const load = await path.measureRtt({ count: roundTrips, ratePerSec: loadPps / 2, size: 256 });
    const after = await path.stats();
    const forwarded = packets(after) - packets(before);
    const cpu = cpuUs(after) - cpuUs(before);
    const perPacket = forwarded === 0 ? 0 : cpu / forwarded;
    const seconds = (after.uptimeUs - before.uptimeUs) / 1e6;
    process.stdout.write(`${rttLine(`RTT under load (${loadPps} packets/s through the forwarder)`, load)}\n`);
    process.stdout.write(
      `forwarder: ${forwarded} packets in ${seconds.toFixed(2)} s, CPU ${(cpu / 1000).toFixed(1)} ms (${perPacket.toFixed(2)} µs per packet, ${((cpu / 1e6 / seconds) * 100).toFixed(1)}% of a core)\n`,
    );
    for (const [name, d] of [
      ['up', after.up],
      ['down', after.down],
    ] as const) {
      const t = d.timeInForwarderUs;
      process.stdout.write(
        `  ${name}: ${d.packets} packets, time in forwarder min ${t?.min ?? '-'} mean ${t?.mean ?? '-'} max ${t?.max ?? '-'} µs, late mean ${d.lateUs?.mean ?? '-'} p50 ${d.lateUs?.p50 ?? '-'} p99 ${d.lateUs?.p99 ?? '-'} max ${d.lateUs?.max ?? '-'} µs, drops ${d.randomDrops} random / ${d.queueDrops} queue\n`,
      );
    }
    if (values.json === true) {
      process.stdout.write(
        `${JSON.stringify({ configured: path.configured, sched: after.sched, mlock: after.mlock, rtt, pathRttMs, load: { pps: loadPps, rtt: load, packets: forwarded, cpuUs: cpu, cpuUsPerPacket: perPacket }, forwarder: after })}\n`,
      );
    }
  } finally {
    await path.close();
  }
  return 0;
}

export const command = defineCommand({
  options: OPTIONS,
  async run({ values }) {
    if (values.where === true) {
      process.stdout.write(`${JSON.stringify({ source: forwarderSourcePath(), unavailable: packetPathUnavailableReason() })}\n`);
      return 0;
    }
    const reason = packetPathUnavailableReason();
    if (reason !== null) {
      process.stderr.write(`netpath: ${reason}\n`);
      return 1;
    }
    return values.hold === true ? hold(values) : measure(values);
  },
});
