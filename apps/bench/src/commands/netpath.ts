// `quicpool-bench netpath` (`pnpm bench:netpath`): builds a packet path, measures its RTT with UDP round trips (as
// Node's endpoints see it, and as the forwarder's clock does: the path alone), then the forwarder's CPU per packet
// under a light load, and removes it. Two more modes, used by its tests:
//   --where   prints {"source": <forwarder.c as found from this file>, "unavailable": <reason or null>}
//   --hold    builds a path, prints {"ready":true,...names and pids...} and keeps it until SIGTERM,
//             SIGINT or EOF on stdin (the test SIGKILLs it to check the watchdog's cleanup)
import { choiceOption, defineCommand, JSON_OPTION, numberOption } from '../command-line.js';
import type { Values } from '../command-line.js';
import { forwarderSourcePath } from '../netpath/build.js';
import type { ForwarderStats } from '../netpath/forwarder-process.js';
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

const say = (line: string): void => void process.stdout.write(`${line}\n`);
const ms = (v: number): string => v.toFixed(2);

function rttLine(label: string, r: UdpProbeResult): string {
  return `${label}: ${r.received}/${r.sent} echoed, min ${ms(r.minMs)} mean ${ms(r.meanMs)} p50 ${ms(r.p50Ms)} p99 ${ms(r.p99Ms)} max ${ms(r.maxMs)} mdev ${r.mdevMs.toFixed(3)} ms`;
}

/** The forwarder's CPU so far and the packets it has handled (dropped ones too). */
function work(s: ForwarderStats): { cpuUs: number; packets: number } {
  const packets = s.up.packets + s.down.packets + s.up.randomDrops + s.down.randomDrops + s.up.queueDrops + s.down.queueDrops;
  return { cpuUs: s.cpuUserUs + s.cpuSysUs, packets };
}

async function hold(values: Values<typeof OPTIONS>): Promise<null> {
  const path = await createPacketPath({ delayMs: numberOption('delay-ms', values['delay-ms']) });
  const { clientNs, serverNs, forwarderPid, watchdogPid } = path;
  say(JSON.stringify({ ready: true, pid: process.pid, clientNs, serverNs, forwarderPid, watchdogPid }));
  const stop = (): void => void path.close().then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  process.stdin.once('end', stop);
  process.stdin.resume();
  return null;
}

async function measure(values: Values<typeof OPTIONS>): Promise<void> {
  const up = numberOption('delay-ms', values['delay-ms']);
  const down = values['delay-down-ms'] === undefined ? up : numberOption('delay-down-ms', values['delay-down-ms']);
  const loadPps = numberOption('load-pps', values['load-pps']);
  const loadSeconds = numberOption('load-seconds', values['load-seconds']);
  const path = await createPacketPath({
    delayMs: { up, down },
    lossRate: numberOption('loss', values.loss),
    congestionControl: choiceOption('cc', values.cc, ['cubic', 'bbr', 'reno'] as const),
    realtimePriority: numberOption('realtime-priority', values['realtime-priority']),
  });
  try {
    say(path.description);
    const rtt = await path.measureRtt({ count: numberOption('probes', values.probes), ratePerSec: numberOption('probe-rate', values['probe-rate']), size: 64 });
    const before = await path.stats();
    const pathRttMs = ((before.up.timeInForwarderUs?.mean ?? 0) + (before.down.timeInForwarderUs?.mean ?? 0)) / 1000;
    say(rttLine(`RTT (configured ${up + down} ms)`, rtt));
    const late = (d: ForwarderStats['up']): string => `${d.lateUs?.p50 ?? '-'}/${d.lateUs?.p99 ?? '-'}`;
    say(`path alone (forwarder's clock): mean ${pathRttMs.toFixed(3)} ms (up late p50/p99 ${late(before.up)} µs, down ${late(before.down)} µs)`);
    // Each round trip is two packets through the forwarder, one per direction.
    const load = await path.measureRtt({ count: Math.round((loadPps / 2) * loadSeconds), ratePerSec: loadPps / 2, size: 256 });
    const after = await path.stats();
    const forwarded = work(after).packets - work(before).packets;
    const cpu = work(after).cpuUs - work(before).cpuUs;
    const perPacket = forwarded === 0 ? 0 : cpu / forwarded;
    const seconds = (after.uptimeUs - before.uptimeUs) / 1e6;
    say(rttLine(`RTT under load (${loadPps} packets/s through the forwarder)`, load));
    say(`forwarder: ${forwarded} packets in ${seconds.toFixed(2)} s, CPU ${(cpu / 1000).toFixed(1)} ms (${perPacket.toFixed(2)} µs per packet, ${((cpu / 1e6 / seconds) * 100).toFixed(1)}% of a core)`);
    for (const name of ['up', 'down'] as const) {
      const { timeInForwarderUs: t, lateUs: l, packets, randomDrops, queueDrops } = after[name];
      const inForwarder = `time in forwarder min ${t?.min ?? '-'} mean ${t?.mean ?? '-'} max ${t?.max ?? '-'} µs`;
      const lateness = `late mean ${l?.mean ?? '-'} p50 ${l?.p50 ?? '-'} p99 ${l?.p99 ?? '-'} max ${l?.max ?? '-'} µs`;
      say(`  ${name}: ${packets} packets, ${inForwarder}, ${lateness}, drops ${randomDrops} random / ${queueDrops} queue`);
    }
    if (values.json) {
      const loadJson = { pps: loadPps, rtt: load, packets: forwarded, cpuUs: cpu, cpuUsPerPacket: perPacket };
      say(JSON.stringify({ configured: path.configured, sched: after.sched, mlock: after.mlock, rtt, pathRttMs, load: loadJson, forwarder: after }));
    }
  } finally {
    await path.close();
  }
}

export const command = defineCommand({
  options: OPTIONS,
  async run({ values }) {
    const reason = packetPathUnavailableReason();
    if (values.where) {
      say(JSON.stringify({ source: forwarderSourcePath(), unavailable: reason }));
      return 0;
    }
    if (reason !== null) {
      process.stderr.write(`netpath: ${reason}\n`);
      return 1;
    }
    return values.hold ? hold(values) : measure(values);
  },
});
