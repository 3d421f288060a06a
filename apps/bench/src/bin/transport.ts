// `pnpm bench:transport`: what one 200-byte request/response costs over each transport, client
// and server in separate processes (CPU µs per round trip per side, round trips/s, latency, RSS),
// and how many round trips a client waits for its first response through a 15 ms WAN, fresh QUIC
// connection against 0-RTT resumption. Also this machine's floor for QUIC: quiche (through the
// binding) alone in memory, and Node's UDP alone, per round trip per side.
//   node dist/bin/transport.js [--json] [--duration 3000] [--warmup 1000] [--only tcp,quic,matrixai,first,floor]
//                              [--matrixai 1x40[,1x1,...]] [--rounds 1] [--io native,dgram]
// The QUIC rows run over each UDP I/O path (`quic 1x40 native`: the batched native module,
// `quic 1x40 dgram`: node:dgram); without the native module only the dgram rows run, and say so.
// --rounds N: the ping-pong runs N times, interleaved (tcp, quic, matrixai, tcp, ...), and every
// figure in the table is the median of its N runs: single runs on this shared 2-core machine move
// by 10-20%.
// With --json the last line is one JSON object of the figures. This program also serves as the
// forked worker of its own runs (WORKER_FLAG, and the QUIC bench's server flag).
import { fileURLToPath } from 'node:url';
import { parseCommandLine } from '../command-line.js';
import type { FirstResponseResult } from '../transport/first-response.js';
import { measureFirstResponse } from '../transport/first-response.js';
import type { PingPongResult } from '../transport/pingpong-harness.js';
import { WORKER_FLAG, runPingPongWorker } from '../transport/pingpong-worker.js';
import { runMatrixaiPingPong, matrixaiRoles } from '../transport/matrixai-pingpong.js';
import { SERVER_FLAG, runQuicPingPong, runQuicPingPongServerChild } from '../transport/quic-pingpong.js';
import { runTcpPingPong, tcpRoles } from '../transport/tcp-pingpong.js';
import { nativeUdpFloor, quicheFloor, udpFloor } from '../transport/quic-floor.js';
import { udpIoStatus } from '@quicpool/transport';
import type { UdpIoKind } from '@quicpool/transport';

/** A run: the ping-pong figures plus, for QUIC, send/receive system calls per round trip (both sides). */
type Row = PingPongResult & { sendsPerRt: number | null; recvsPerRt: number | null };
const QUIC_SCENARIOS = [[1, 1], [1, 40], [50, 40]] as const;

if (process.argv.includes(WORKER_FLAG)) {
  runPingPongWorker({ ...tcpRoles, ...matrixaiRoles });
} else if (process.argv.includes(SERVER_FLAG)) {
  runQuicPingPongServerChild();
} else {
  await main();
}

async function main(): Promise<void> {
  const { values } = parseCommandLine('pnpm bench:transport', {
    options: {
      json: { type: 'boolean', default: false },
      duration: { type: 'string', default: '3000' },
      warmup: { type: 'string', default: '1000' },
      only: { type: 'string', default: 'tcp,quic,matrixai,first,floor' },
      // connections x streams for the @matrixai/quic high-level reference (keep streams < 1000).
      matrixai: { type: 'string', default: '1x40' },
      rounds: { type: 'string', default: '1' },
      // UDP I/O paths for the QUIC rows.
      io: { type: 'string', default: 'native,dgram' },
    },
  });
  const durationMs = Number(values.duration);
  const warmupMs = Number(values.warmup);
  const only = new Set(values.only.split(','));
  const rounds = Number(values.rounds);
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`--rounds must be a whole number >= 1, got ${values.rounds}`);
  const script = fileURLToPath(import.meta.url);
  const native = udpIoStatus();
  const ioPaths: UdpIoKind[] = [];
  for (const io of values.io.split(',')) {
    if (io !== 'native' && io !== 'dgram') throw new Error(`--io takes native and/or dgram, got ${io}`);
    if (io === 'native' && native.kind !== 'native') {
      process.stderr.write(`native UDP module unavailable here (${native.reason ?? 'unknown'}): QUIC rows run over node:dgram only\n`);
      continue;
    }
    ioPaths.push(io);
  }
  // What the `quic` figures of the JSON line use: the native path whenever it ran.
  const quicIo: UdpIoKind = ioPaths.includes('native') ? 'native' : 'dgram';
  const runs: Row[] = [];
  const failures: Array<{ label: string; error: string }> = [];
  let round = 1;
  const attempt = async (label: string, run: () => Promise<Row>): Promise<void> => {
    process.stderr.write(`running ${label}${rounds > 1 ? ` (round ${round}/${rounds})` : ''} ...\n`);
    try {
      runs.push(await run());
    } catch (error) {
      failures.push({ label, error: error instanceof Error ? error.message : String(error) });
    }
  };

  for (round = 1; round <= rounds; round++) {
    if (only.has('tcp')) {
      for (const sockets of [1, 40, 2000]) {
        await attempt(`tcp ${sockets}`, async () => ({
          ...(await runTcpPingPong({ sockets, durationMs, warmupMs, payload: 200, workerScript: script })),
          sendsPerRt: null,
          recvsPerRt: null,
        }));
      }
    }
    if (only.has('quic')) {
      for (const [connections, streams] of QUIC_SCENARIOS) for (const udpIo of ioPaths) {
        await attempt(`quic ${connections}x${streams} ${udpIo}`, async () => {
          const r = await runQuicPingPong({ connections, streamsPerConnection: streams, durationMs, warmupMs, serverScript: script, udpIo });
          return {
            label: `quic ${r.scenario} ${udpIo}`,
            roundTrips: r.roundTrips,
            roundTripsPerSec: r.roundTripsPerSec,
            usPerRtClient: r.clientCpuUsPerRoundTrip,
            usPerRtServer: r.serverCpuUsPerRoundTrip,
            p50Us: r.p50Us,
            p99Us: r.p99Us,
            rssClientMB: r.clientRssMb,
            rssServerMB: r.serverRssMb,
            datagramsPerRt: r.datagramsPerRoundTrip,
            sendsPerRt: r.sendCallsPerRoundTrip,
            recvsPerRt: r.recvCallsPerRoundTrip,
          };
        });
      }
    }
    if (only.has('matrixai')) {
      for (const scenario of values.matrixai.split(',')) {
        const [connections, streams] = scenario.split('x').map(Number);
        if (connections === undefined || streams === undefined || !(connections > 0) || !(streams > 0)) throw new Error(`bad --matrixai ${scenario}`);
        await attempt(`matrixai ${scenario}`, async () => ({
          ...(await runMatrixaiPingPong({ connections, streamsPerConnection: streams, durationMs, warmupMs, workerScript: script })),
          sendsPerRt: null,
          recvsPerRt: null,
        }));
      }
    }
  }
  const rows = medianRows(runs);
  let first: FirstResponseResult | null = null;
  if (only.has('first')) {
    process.stderr.write('running first response through the WAN emulator ...\n');
    try {
      first = await measureFirstResponse(15);
    } catch (error) {
      failures.push({ label: 'first response', error: error instanceof Error ? error.message : String(error) });
    }
  }

  let floor: Floor | null = null;
  if (only.has('floor')) {
    process.stderr.write('running floor (quiche alone, Node UDP alone, native UDP alone) ...\n');
    // 40 in flight, as in the 1x40 run: quiche's work per packet and the UDP syscalls, nothing of ours.
    const quiche = round1(await quicheFloor(40));
    const udp = round1(await udpFloor(40));
    const nativeUdp = await nativeUdpFloor(40);
    floor = {
      quicheUsPerRtPerSide: quiche,
      udpUsPerRtPerSide: udp,
      sumUsPerRtPerSide: round1(quiche + udp),
      nativeUdpUsPerRtPerSide: nativeUdp === null ? null : round1(nativeUdp),
      nativeSumUsPerRtPerSide: nativeUdp === null ? null : round1(quiche + nativeUdp),
    };
  }

  printTable(rows, durationMs, rounds);
  const ratios = quicVsTcp(rows, quicIo);
  if (ratios.length > 0) {
    console.log(`\nQUIC (${quicIo}) / TCP, CPU per round trip, client and server side:`);
    for (const r of ratios) console.log(`  quic ${r.quic} vs tcp ${r.tcp}: client ${r.client.toFixed(2)}x, server ${r.server.toFixed(2)}x, both ${r.ratio.toFixed(2)}x`);
  }
  const dgramRatios = quicIo === 'native' ? quicVsTcp(rows, 'dgram') : [];
  if (dgramRatios.length > 0) {
    console.log(`QUIC (dgram) / TCP, both sides: ${dgramRatios.map((r) => `${r.quic} vs tcp ${r.tcp}: ${r.ratio.toFixed(2)}x`).join('; ')}`);
  }
  if (floor !== null) {
    console.log(
      `Floor for QUIC on this machine, per round trip per side: quiche through the binding alone ${floor.quicheUsPerRtPerSide} µs ` +
        `(two connections in memory, no sockets); UDP alone (one send + one receive): node:dgram ${floor.udpUsPerRtPerSide} µs` +
        (floor.nativeUdpUsPerRtPerSide === null ? '' : `, native batched ${floor.nativeUdpUsPerRtPerSide} µs`) +
        ` => ${floor.nativeSumUsPerRtPerSide ?? floor.sumUsPerRtPerSide} µs before any stream or endpoint work`,
    );
  }
  if (first !== null) {
    console.log(
      `\nFirst response through the WAN emulator (${first.configuredOneWayMs} ms one way, measured RTT ${first.measuredRttMs} ms, median of ${first.trials}):` +
        `\n  fresh QUIC connection: ${first.fullMs} ms = ${first.full} RTT` +
        `\n  0-RTT resumed:         ${first.zeroRttMs} ms = ${first.zeroRtt} RTT (server saw early data: ${first.serverSawEarlyData})`,
    );
  }
  for (const failure of failures) console.log(`not available: ${failure.label}: ${failure.error}`);
  if (values.json) {
    console.log(JSON.stringify({ statistic: rounds > 1 ? `median of ${rounds} rounds` : 'single run', ...summary(rows, quicIo, first, floor, ratios, failures) }));
  }
}

interface Floor {
  quicheUsPerRtPerSide: number;
  udpUsPerRtPerSide: number;
  sumUsPerRtPerSide: number;
  nativeUdpUsPerRtPerSide: number | null;
  nativeSumUsPerRtPerSide: number | null;
}

interface Ratio {
  quic: string;
  tcp: string;
  /** QUIC over TCP, CPU per round trip: client side, server side, both sides together. */
  client: number;
  server: number;
  ratio: number;
}

/**
 * Each QUIC scenario (over `io`) against the TCP run with as many concurrent sessions, 50x40 also
 * against 40 sockets (the targets compare with TCP-40), and 1x1 against one socket.
 */
function quicVsTcp(rows: Row[], io: UdpIoKind): Ratio[] {
  const row = (label: string): Row | undefined => rows.find((x) => x.label === label);
  const out: Ratio[] = [];
  for (const [quic, tcp] of [['1x1', '1'], ['1x40', '40'], ['50x40', '2000'], ['50x40', '40']] as const) {
    const q = row(`quic ${quic} ${io}`);
    const t = row(`tcp ${tcp}`);
    if (q === undefined || t === undefined || t.usPerRtClient <= 0 || t.usPerRtServer <= 0) continue;
    out.push({
      quic,
      tcp,
      client: q.usPerRtClient / t.usPerRtClient,
      server: q.usPerRtServer / t.usPerRtServer,
      ratio: (q.usPerRtClient + q.usPerRtServer) / (t.usPerRtClient + t.usPerRtServer),
    });
  }
  return out;
}

function round2(x: number): number {
  return Math.round(x * 100) / 100;
}

function round1(x: number): number {
  return Math.round(x * 10) / 10;
}

/** One row per label: each figure the median of that label's runs. */
function medianRows(runs: Row[]): Row[] {
  const labels = [...new Set(runs.map((r) => r.label))];
  return labels.map((label) => {
    const of = runs.filter((r) => r.label === label);
    const med = (get: (r: Row) => number): number => {
      const v = of.map(get).sort((a, b) => a - b);
      const mid = v.length >> 1;
      return v.length % 2 === 1 ? v[mid]! : (v[mid - 1]! + v[mid]!) / 2;
    };
    const dgrams = of.every((r) => r.datagramsPerRt !== null) ? med((r) => r.datagramsPerRt ?? 0) : null;
    const sends = of.every((r) => r.sendsPerRt !== null) ? med((r) => r.sendsPerRt ?? 0) : null;
    const recvs = of.every((r) => r.recvsPerRt !== null) ? med((r) => r.recvsPerRt ?? 0) : null;
    return {
      label,
      roundTrips: med((r) => r.roundTrips),
      roundTripsPerSec: Math.round(med((r) => r.roundTripsPerSec)),
      usPerRtClient: round1(med((r) => r.usPerRtClient)),
      usPerRtServer: round1(med((r) => r.usPerRtServer)),
      p50Us: Math.round(med((r) => r.p50Us)),
      p99Us: Math.round(med((r) => r.p99Us)),
      rssClientMB: Math.round(med((r) => r.rssClientMB)),
      rssServerMB: Math.round(med((r) => r.rssServerMB)),
      datagramsPerRt: dgrams,
      sendsPerRt: sends,
      recvsPerRt: recvs,
    };
  });
}

function printTable(rows: Row[], durationMs: number, rounds: number): void {
  console.log(
    `Transport ping-pong, 200-byte request/response, client and server in separate processes, ${durationMs} ms window` +
      (rounds > 1 ? `, median of ${rounds} interleaved rounds` : ''),
  );
  const header = ['run', 'rt/s', 'client µs/rt', 'server µs/rt', 'p50 µs', 'p99 µs', 'dgrams/rt', 'sends/rt', 'recvs/rt', 'client RSS MB', 'server RSS MB'];
  const lines = rows.map((r) => [
    r.label,
    String(r.roundTripsPerSec),
    r.usPerRtClient.toFixed(1),
    r.usPerRtServer.toFixed(1),
    String(r.p50Us),
    String(r.p99Us),
    r.datagramsPerRt === null ? '-' : r.datagramsPerRt.toFixed(2),
    r.sendsPerRt === null ? '-' : r.sendsPerRt.toFixed(3),
    r.recvsPerRt === null ? '-' : r.recvsPerRt.toFixed(3),
    String(r.rssClientMB),
    String(r.rssServerMB),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((line) => (line[i] ?? '').length)));
  const format = (cells: string[]): string => cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0))).join('  ');
  console.log(format(header));
  for (const line of lines) console.log(format(line));
  console.log('(dgrams, sends, recvs: datagrams and send/receive system calls of both sides per round trip)');
}

type Figures = {
  roundTripsPerSec: number;
  usPerRtClient: number;
  usPerRtServer: number;
  p50Us: number;
  p99Us: number;
  datagramsPerRt?: number;
  sendCallsPerRt?: number;
  recvCallsPerRt?: number;
};

function summary(
  rows: Row[],
  quicIo: UdpIoKind,
  first: FirstResponseResult | null,
  floor: Floor | null,
  ratios: Ratio[],
  failures: Array<{ label: string; error: string }>,
): object {
  /** Rows `<prefix> <key>[ <suffix>]` keyed by <key> ('1x40', '40' ...). */
  const group = (prefix: string, suffix = ''): Record<string, Figures> => {
    const out: Record<string, Figures> = {};
    for (const r of rows) {
      if (!r.label.startsWith(`${prefix} `) || !r.label.endsWith(suffix)) continue;
      out[r.label.slice(prefix.length + 1, r.label.length - suffix.length)] = {
        roundTripsPerSec: r.roundTripsPerSec,
        usPerRtClient: r.usPerRtClient,
        usPerRtServer: r.usPerRtServer,
        p50Us: r.p50Us,
        p99Us: r.p99Us,
        ...(r.datagramsPerRt !== null ? { datagramsPerRt: r.datagramsPerRt } : {}),
        ...(r.sendsPerRt !== null ? { sendCallsPerRt: r.sendsPerRt } : {}),
        ...(r.recvsPerRt !== null ? { recvCallsPerRt: r.recvsPerRt } : {}),
      };
    }
    return out;
  };
  return {
    quic: group('quic', ` ${quicIo}`),
    quicIo,
    quicDgram: group('quic', ' dgram'),
    tcp: group('tcp'),
    matrixaiHighLevel: group('matrixai'),
    firstResponseRtts: first === null ? null : { full: first.full, zeroRtt: first.zeroRtt, measuredRttMs: first.measuredRttMs },
    quicVsTcpCpu: Object.fromEntries(
      ratios.map((r) => [`quic ${r.quic} / tcp ${r.tcp}`, { client: round2(r.client), server: round2(r.server), both: round2(r.ratio) }]),
    ),
    floor,
    notAvailable: failures,
  };
}
