// `quicpool-bench transport` (`pnpm bench:transport`): what one 200-byte request/response costs
// over each transport, client and server in separate processes (CPU µs per round trip per side,
// round trips/s, latency, RSS), and how many round trips a client waits for its first response
// through a 15 ms WAN, fresh QUIC connection against 0-RTT resumption. Also this machine's floor
// for QUIC: quiche (through the binding) alone in memory, and Node's UDP alone, per round trip per side.
// The QUIC rows run over each UDP I/O path (--io: `quic 1x40 native`, the batched native module;
// `quic 1x40 dgram`, node:dgram); without the native module only the dgram rows run, and say so.
// --matrixai: connections x streams for the @matrixai/quic high-level reference (keep streams < 1000).
// --rounds N: the ping-pong runs N times, interleaved (tcp, quic, matrixai, tcp, ...), and every
// figure in the table is the median of its N runs: single runs on this shared 2-core machine move by 10-20%.
import { udpIoStatus } from '@quicpool/transport';
import type { UdpIoKind } from '@quicpool/transport';
import { defineCommand, JSON_OPTION, UsageError, wholeOption } from '../command-line.js';
import type { FirstResponseResult } from '../transport/first-response.js';
import { measureFirstResponse } from '../transport/first-response.js';
import { runMatrixaiPingPong } from '../transport/matrixai-pingpong.js';
import { runQuicPingPong } from '../transport/quic-pingpong.js';
import { nativeUdpFloor, quicheFloor, udpFloor } from '../transport/quic-floor.js';
import { round1 } from '../report/round.js';
import { medianRows, printTable, quicVsTcp, summary } from '../transport/summary.js';
import type { Floor, Row } from '../transport/summary.js';
import { runTcpPingPong } from '../transport/tcp-pingpong.js';

const QUIC_SCENARIOS = [[1, 1], [1, 40], [50, 40]] as const;

export const command = defineCommand({
  options: {
    ...JSON_OPTION,
    duration: { type: 'string', default: '3000' },
    warmup: { type: 'string', default: '1000' },
    only: { type: 'string', default: 'tcp,quic,matrixai,first,floor' },
    matrixai: { type: 'string', default: '1x40' },
    rounds: { type: 'string', default: '1' },
    io: { type: 'string', default: 'native,dgram' },
  },
  async run({ values, program }) {
    const durationMs = Number(values.duration);
    const warmupMs = Number(values.warmup);
    const only = new Set(values.only.split(','));
    const rounds = wholeOption('rounds', values.rounds);
    const native = udpIoStatus();
    const ioPaths: UdpIoKind[] = [];
    for (const io of values.io.split(',')) {
      if (io !== 'native' && io !== 'dgram') throw new UsageError(`--io takes native and/or dgram, got ${io}`);
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
            ...(await runTcpPingPong({ sockets, durationMs, warmupMs, payload: 200, workerScript: program })),
            sendsPerRt: null,
            recvsPerRt: null,
          }));
        }
      }
      if (only.has('quic')) {
        for (const [connections, streams] of QUIC_SCENARIOS) for (const udpIo of ioPaths) {
          await attempt(`quic ${connections}x${streams} ${udpIo}`, async () => {
            const r = await runQuicPingPong({ connections, streamsPerConnection: streams, durationMs, warmupMs, serverScript: program, udpIo });
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
          if (connections === undefined || streams === undefined || !(connections > 0) || !(streams > 0)) throw new UsageError(`bad --matrixai ${scenario}`);
          await attempt(`matrixai ${scenario}`, async () => ({
            ...(await runMatrixaiPingPong({ connections, streamsPerConnection: streams, durationMs, warmupMs, workerScript: program })),
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
    return 0;
  },
});
