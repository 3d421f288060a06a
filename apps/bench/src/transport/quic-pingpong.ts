// 200-byte request/response ping-pong over the lean QUIC endpoint, client and server in separate
// processes so each side's CPU is its own. The parent is the client; the server is a forked
// child that answers every byte it receives (an echo) and reports its CPU and counters over IPC.
import { generateDevCertificates, QuicDialer, QuicListener } from '@quicpool/transport';
import type { SessionStream, UdpIoKind } from '@quicpool/transport';
import { QUIC_SERVER_FLAG } from '../commands/worker-flags.js';
import { IpcChild } from '../process/ipc-child.js';
import { round1, round2 } from '../report/round.js';
import { echo, keepBusy } from './ping-stream.js';

export interface QuicPingPongOptions {
  connections: number;
  streamsPerConnection: number;
  /** Measured window, after warm-up. */
  durationMs?: number;
  warmupMs?: number;
  payloadBytes?: number;
  /** Script to fork as the server: it must call `runQuicPingPongServerChild()` when started with QUIC_SERVER_FLAG. */
  serverScript: string;
  /** The UDP I/O path of both endpoints (the native batched module or node:dgram). */
  udpIo: UdpIoKind;
}

export interface QuicPingPongResult {
  scenario: string;
  connections: number;
  streams: number;
  roundTrips: number;
  roundTripsPerSec: number;
  clientCpuUsPerRoundTrip: number;
  serverCpuUsPerRoundTrip: number;
  /** Datagrams in both directions per round trip (request + response = 2 at best). */
  datagramsPerRoundTrip: number;
  /** Send and receive system calls of both sides per round trip (sendmmsg/recvmmsg batch them). */
  sendCallsPerRoundTrip: number;
  recvCallsPerRoundTrip: number;
  /** The I/O path both endpoints really used (they report it). */
  udpIo: UdpIoKind;
  p50Us: number;
  p99Us: number;
  clientRssMb: number;
  serverRssMb: number;
}


type ToChild = { t: 'listen'; cert: string; key: string; udpIo: UdpIoKind } | { t: 'start' } | { t: 'stop' } | { t: 'exit' };
type FromChild =
  | { t: 'listening'; port: number }
  | { t: 'started' }
  | { t: 'stopped'; cpuUs: number; datagramsOut: number; datagramsIn: number; sendCalls: number; recvCalls: number; rss: number; io: UdpIoKind };

/** Entry point of the forked server process. */
export function runQuicPingPongServerChild(): void {
  let listener: QuicListener | null = null;
  let cpu0 = process.cpuUsage();
  let out0 = 0;
  let in0 = 0;
  let sends0 = 0;
  let recvs0 = 0;
  const send = (m: FromChild): void => void process.send?.(m);
  process.on('message', (m: ToChild) => {
    switch (m.t) {
      case 'listen':
        void QuicListener.listen({ cert: m.cert, key: m.key, maxStreamsPerConnection: 1000, udpIo: m.udpIo }).then((l) => {
          listener = l;
          l.onSession((s: SessionStream) => {
            echo(s);
            s.on('end', () => s.end());
          });
          send({ t: 'listening', port: l.address().port });
        });
        break;
      case 'start': {
        const st = listener?.stats();
        out0 = st?.datagramsOut ?? 0;
        in0 = st?.datagramsIn ?? 0;
        sends0 = st?.sendCalls ?? 0;
        recvs0 = st?.recvCalls ?? 0;
        cpu0 = process.cpuUsage();
        send({ t: 'started' });
        break;
      }
      case 'stop': {
        const cpu = process.cpuUsage(cpu0);
        const st = listener?.stats();
        send({
          t: 'stopped', cpuUs: cpu.user + cpu.system,
          datagramsOut: (st?.datagramsOut ?? 0) - out0, datagramsIn: (st?.datagramsIn ?? 0) - in0,
          sendCalls: (st?.sendCalls ?? 0) - sends0, recvCalls: (st?.recvCalls ?? 0) - recvs0,
          rss: process.memoryUsage().rss, io: st?.io ?? 'dgram',
        });
        break;
      }
      case 'exit':
        void (listener?.close({ graceful: false }) ?? Promise.resolve()).then(() => process.exit(0));
        break;
      default: {
        const never: never = m;
        throw new Error(`unknown message ${JSON.stringify(never)}`);
      }
    }
  });
}

export async function runQuicPingPong(opts: QuicPingPongOptions): Promise<QuicPingPongResult> {
  const durationMs = opts.durationMs ?? 3000;
  const warmupMs = opts.warmupMs ?? 1000;
  const size = opts.payloadBytes ?? 200;
  const certs = await generateDevCertificates({ names: ['localhost'] });
  // The server child inherits this process's Node flags (unless BENCH_WORKER_NODE_ARGS is set).
  const child = new IpcChild<ToChild, FromChild>(opts.serverScript, [QUIC_SERVER_FLAG]);
  const dialer = { current: null as QuicDialer | null };
  try {
    const l = await child.request({ t: 'listen', cert: certs.certPem, key: certs.keyPem, udpIo: opts.udpIo }, 'listening');
    const d = new QuicDialer({
      host: '127.0.0.1', port: l.port, serverName: 'localhost', ca: certs.caPem, connections: opts.connections, udpIo: opts.udpIo,
    });
    dialer.current = d;
    const total = opts.connections * opts.streamsPerConnection;
    const streams = await Promise.all(Array.from({ length: total }, () => d.open()));

    const payload = Buffer.alloc(size, 0x61);
    let counting = false;
    let running = true;
    let roundTrips = 0;
    const lat = new Float64Array(2_000_000);
    let nLat = 0;
    const onRoundTrip = (ms: number): void => {
      if (!counting) return;
      roundTrips++;
      if (nLat < lat.length) lat[nLat++] = ms;
    };
    for (const s of streams) keepBusy(s, payload, onRoundTrip, () => running);
    await new Promise((r) => setTimeout(r, warmupMs));
    await child.request({ t: 'start' }, 'started');
    const st0 = await d.stats();
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    counting = true;
    await new Promise((r) => setTimeout(r, durationMs));
    counting = false;
    const elapsed = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    const st1 = await d.stats();
    const rtsCounted = roundTrips;
    const srv = await child.request({ t: 'stop' }, 'stopped');
    if (st1.io !== opts.udpIo || srv.io !== opts.udpIo) throw new Error(`asked for ${opts.udpIo} UDP I/O, the endpoints used ${st1.io}/${srv.io}`);
    running = false;
    const clientRss = process.memoryUsage().rss;

    const sorted = lat.subarray(0, nLat).sort();
    const pct = (p: number): number => (nLat === 0 ? 0 : sorted[Math.min(nLat - 1, Math.floor(p * nLat))]! * 1000);
    const rt = Math.max(1, rtsCounted);
    return {
      scenario: `${opts.connections}x${opts.streamsPerConnection}`,
      connections: opts.connections,
      streams: total,
      roundTrips: rtsCounted,
      roundTripsPerSec: Math.round((rtsCounted * 1000) / elapsed),
      clientCpuUsPerRoundTrip: round1((cpu.user + cpu.system) / rt),
      serverCpuUsPerRoundTrip: round1(srv.cpuUs / rt),
      // Every datagram is counted once: what the client sent plus what the server sent.
      datagramsPerRoundTrip: round2((st1.datagramsOut - st0.datagramsOut + srv.datagramsOut) / rt),
      sendCallsPerRoundTrip: round2((st1.sendCalls - st0.sendCalls + srv.sendCalls) / rt),
      recvCallsPerRoundTrip: round2((st1.recvCalls - st0.recvCalls + srv.recvCalls) / rt),
      udpIo: opts.udpIo,
      p50Us: Math.round(pct(0.5)),
      p99Us: Math.round(pct(0.99)),
      clientRssMb: Math.round(clientRss / 1048576),
      serverRssMb: Math.round(srv.rss / 1048576),
    };
  } finally {
    await dialer.current?.close({ graceful: false });
    await child.exit();
  }
}
