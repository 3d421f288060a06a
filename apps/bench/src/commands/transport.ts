// `quicpool-bench transport` (`pnpm bench:transport`): the ping-pong (transport/pingpong-harness.ts), the first response
// through a 15 ms WAN (first-response.ts) and the QUIC floor (quic-floor.ts). --io: the UDP I/O paths of the QUIC rows
// (`native`, the batched module, skipped with a note where missing; `dgram`). --matrixai: connections x streams of the
// @matrixai/quic high-level reference (streams < 1000). --rounds N: the ping-pong runs N times, interleaved, and every
// figure in the table is the median of its N runs: single runs on this shared 2-core machine move by 10-20%.
import { udpIoStatus } from '@quicpool/transport';
import type { UdpIoKind } from '@quicpool/transport';
import { defineCommand, JSON_OPTION, UsageError, wholeOption } from '../command-line.js';
import { measureFirstResponse } from '../transport/first-response.js';
import type { PingPongResult, PingPongVariant } from '../transport/pingpong-harness.js';
import { pingPongLabel, runPingPong } from '../transport/pingpong-harness.js';
import { measureFloor } from '../transport/quic-floor.js';
import { medianRows, printTable, quicVsTcp, summary } from '../transport/summary.js';

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
    const matrixai = values.matrixai.split(',').map((scenario) => {
      const [connections, streamsPerConnection] = scenario.split('x').map(Number);
      if (connections === undefined || streamsPerConnection === undefined || !(connections > 0) || !(streamsPerConnection > 0)) {
        throw new UsageError(`bad --matrixai ${scenario}`);
      }
      return { transport: 'matrixai', connections, streamsPerConnection } as const;
    });
    const runs: PingPongResult[] = [];
    const failures: Array<{ label: string; error: string }> = [];
    // A failed measurement is reported ("not available") instead of ending the command.
    const attempt = async <T>(label: string, run: () => Promise<T>): Promise<T | null> => {
      try {
        return await run();
      } catch (error) {
        failures.push({ label, error: error instanceof Error ? error.message : String(error) });
        return null;
      }
    };
    const pingPong = async (round: number, variant: PingPongVariant): Promise<void> => {
      const label = pingPongLabel(variant);
      process.stderr.write(`running ${label}${rounds > 1 ? ` (round ${round}/${rounds})` : ''} ...\n`);
      const row = await attempt(label, () => runPingPong({ ...variant, durationMs, warmupMs: Number(values.warmup), program }));
      if (row !== null) runs.push(row);
    };

    for (let round = 1; round <= rounds; round++) {
      if (only.has('tcp')) for (const sockets of [1, 40, 2000]) await pingPong(round, { transport: 'tcp', connections: sockets, streamsPerConnection: 1 });
      if (only.has('quic')) {
        for (const [connections, streamsPerConnection] of QUIC_SCENARIOS) {
          for (const udpIo of ioPaths) await pingPong(round, { transport: 'quic', connections, streamsPerConnection, udpIo });
        }
      }
      if (only.has('matrixai')) for (const variant of matrixai) await pingPong(round, variant);
    }
    const rows = medianRows(runs);
    if (only.has('first')) process.stderr.write('running first response through the relay ...\n');
    const first = only.has('first') ? await attempt('first response', () => measureFirstResponse(15)) : null;
    if (only.has('floor')) process.stderr.write('running floor (quiche alone, Node UDP alone, native UDP alone) ...\n');
    const floor = only.has('floor') ? await measureFloor() : null;

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
        `\nFirst response through the relay (${first.configuredOneWayMs} ms one way, measured RTT ${first.measuredRttMs} ms, median of ${first.trials}):` +
          `\n  fresh QUIC connection: ${first.fullMs} ms = ${first.full} RTT` +
          `\n  0-RTT resumed:         ${first.zeroRttMs} ms = ${first.zeroRtt} RTT (server saw early data: ${first.serverSawEarlyData})`,
      );
    }
    for (const failure of failures) console.log(`not available: ${failure.label}: ${failure.error}`);
    if (values.json) {
      console.log(JSON.stringify({ statistic: rounds > 1 ? `median of ${rounds} rounds` : 'single run', ...summary(rows, quicIo, first, floor, ratios, failures) }));
    }
  },
});
