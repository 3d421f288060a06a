/**
 * QUIC transport micro-benchmark: 200-byte request/response ping-pong over the lean QUIC endpoint
 * of @quicpool/transport, client (this process) and server (a forked child) measured separately.
 *
 * Options: --json (last line is one JSON object), --duration MS (default 3000), --warmup MS
 * (default 1000), --scenarios LIST (default 1x1,1x40,50x40: connections x streams per connection).
 * Also prints this machine's floor: quiche alone in memory and Node UDP alone, per side.
 */
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { SERVER_FLAG, runQuicPingPong, runQuicPingPongServerChild } from '../transport/quic-pingpong.js';
import type { QuicPingPongResult } from '../transport/quic-pingpong.js';
import { quicheFloor, udpFloor } from '../transport/quic-floor.js';

if (process.argv.includes(SERVER_FLAG)) {
  runQuicPingPongServerChild();
} else {
  await main();
}

async function main(): Promise<void> {
  const { values: args } = parseArgs({
    options: {
      json: { type: 'boolean', default: false },
      duration: { type: 'string', default: '3000' },
      warmup: { type: 'string', default: '1000' },
      scenarios: { type: 'string', default: '1x1,1x40,50x40' },
    },
  });
  const results: QuicPingPongResult[] = [];
  for (const sc of args.scenarios.split(',')) {
    const [c, s] = sc.split('x').map(Number);
    if (c === undefined || s === undefined || !(c > 0) || !(s > 0)) throw new Error(`bad scenario ${sc}`);
    results.push(
      await runQuicPingPong({
        connections: c, streamsPerConnection: s,
        durationMs: Number(args.duration), warmupMs: Number(args.warmup),
        serverScript: fileURLToPath(import.meta.url),
      }),
    );
  }
  // The same machine's floor: quiche alone (in memory) and Node's UDP alone, at 40 in flight.
  const floor = { quicheUsPerRoundTripPerSide: round1(await quicheFloor(40)), udpUsPerDatagramPerSide: round1(await udpFloor(40)) };
  console.log('QUIC ping-pong, 200-byte request/response, client and server in separate processes');
  console.table(
    results.map((r) => ({
      scenario: r.scenario,
      'rt/s': r.roundTripsPerSec,
      'client µs/rt': r.clientCpuUsPerRoundTrip,
      'server µs/rt': r.serverCpuUsPerRoundTrip,
      'dgrams/rt': r.datagramsPerRoundTrip,
      'p50 µs': r.p50Us,
      'p99 µs': r.p99Us,
      'client RSS MB': r.clientRssMb,
      'server RSS MB': r.serverRssMb,
    })),
  );
  console.log(
    `floor on this machine: quiche alone ${floor.quicheUsPerRoundTripPerSide} µs/rt/side, ` +
      `Node UDP alone ${floor.udpUsPerDatagramPerSide} µs/rt/side (one send + one receive)`,
  );
  if (args.json) console.log(JSON.stringify({ bench: 'transport-quic', results, floor }));
}

function round1(x: number): number {
  return Math.round(x * 10) / 10;
}
