// A ping-pong run: starts the server and client sides (forked workers of this program; our QUIC client in this process),
// lets the client warm up, then measures one window: round trips, CPU, RSS and UDP counters of each side.
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { generateDevCertificates } from '@quicpool/transport';
import { PINGPONG_FLAG, QUIC_SERVER_FLAG } from '../commands/worker-flags.js';
import { IpcChild } from '../process/ipc-child.js';
import { round1, round2 } from '../report/round.js';
import { assertBelowStreamLimit } from './matrixai-pingpong.js';
import { PingPongSide } from './pingpong-worker.js';
import type { FromWorker, PingPongConfig, ToWorker, UdpCounters } from './pingpong-worker.js';
import { quicRoles } from './quic-pingpong.js';

export type PingPongResult = Awaited<ReturnType<typeof runPingPong>>;

/** The client's connections (TCP: sockets, one stream each) and streams; QUIC: the UDP I/O path of both endpoints. */
export type PingPongVariant = Pick<PingPongConfig, 'connections' | 'streamsPerConnection' | 'udpIo'> & { transport: 'tcp' | 'quic' | 'matrixai' };

/** 'tcp 40', 'quic 1x40 native', 'matrixai 1x40'. */
export function pingPongLabel(v: PingPongVariant): string {
  if (v.transport === 'tcp') return `tcp ${v.connections}`;
  return `${v.transport} ${v.connections}x${v.streamsPerConnection}${v.udpIo === undefined ? '' : ` ${v.udpIo}`}`;
}

/** The latencies our QUIC client keeps per window, in this process. */
const CLIENT_SAMPLES = 2_000_000;

type Side = Pick<PingPongSide, 'init' | 'start' | 'stop' | 'exit'>;

/** A side in a child process of the bench program (`args`: its worker flag), driven over IPC. */
function forked(program: string, args: readonly string[], execArgv?: readonly string[]): Side {
  const child = new IpcChild<ToWorker, FromWorker>(program, args, execArgv);
  return {
    init: async (role, config) => (await child.request({ t: 'init', role, config }, 'ready')).port,
    start: async () => void (await child.request({ t: 'start' }, 'started')),
    stop: () => child.request({ t: 'stop' }, 'stopped'),
    exit: () => child.exit(),
  };
}

/** `program`: the built bench program, which the forked sides run. */
export async function runPingPong(o: PingPongVariant & { durationMs: number; warmupMs: number; program: string }) {
  const { transport, connections, streamsPerConnection, udpIo } = o;
  if (transport === 'matrixai') assertBelowStreamLimit(streamsPerConnection);
  const certs = transport === 'tcp' ? null : await generateDevCertificates({ names: ['localhost'] });
  const tls = certs === null ? {} : { certPem: certs.certPem, keyPem: certs.keyPem, caPem: certs.caPem };
  const config: PingPongConfig = { connections, streamsPerConnection, payloadBytes: 200, udpIo, ...tls };
  // The QUIC server inherits this process's Node flags (unless BENCH_WORKER_NODE_ARGS is set); the workers get none.
  const server = transport === 'quic' ? forked(o.program, [QUIC_SERVER_FLAG]) : forked(o.program, [PINGPONG_FLAG, `${transport}-server`], []);
  const client = transport === 'quic' ? new PingPongSide(quicRoles, CLIENT_SAMPLES) : forked(o.program, [PINGPONG_FLAG, `${transport}-client`], []);
  try {
    const port = await server.init(`${transport}-server`, config);
    await client.init(`${transport}-client`, { ...config, port });
    await sleep(o.warmupMs);
    await server.start();
    await client.start();
    const started = performance.now();
    await sleep(o.durationMs);
    const stopAsked = performance.now();
    const c = await client.stop();
    // A client in this process stops counting when asked; a forked one's window is timed until its
    // report arrives (IPC and its sorting of the latencies included: well under 1% of a window).
    const elapsedMs = (client instanceof PingPongSide ? stopAsked : performance.now()) - started;
    const s = await server.stop();
    if (udpIo !== undefined && (c.udp?.io !== udpIo || s.udp?.io !== udpIo)) {
      throw new Error(`asked for ${udpIo} UDP I/O, the endpoints used ${c.udp?.io}/${s.udp?.io}`);
    }
    const rts = Math.max(1, c.roundTrips);
    // Every datagram and call is counted once: the client's plus the server's.
    const perRt = (get: (u: UdpCounters) => number | null): number | null => {
      const ofClient = c.udp === null ? null : get(c.udp);
      const ofServer = s.udp === null ? null : get(s.udp);
      return ofClient === null || ofServer === null ? null : round2((ofClient + ofServer) / rts);
    };
    return {
      label: pingPongLabel(o),
      roundTripsPerSec: Math.round((c.roundTrips * 1000) / elapsedMs),
      /** CPU time (user + system) per round trip, client process and server process. */
      usPerRtClient: round1(c.cpuUs / rts),
      usPerRtServer: round1(s.cpuUs / rts),
      p50Us: c.p50Us,
      p99Us: c.p99Us,
      rssClientMB: Math.round(c.rssBytes / 2 ** 20),
      rssServerMB: Math.round(s.rssBytes / 2 ** 20),
      /** Datagrams, send and receive system calls of both sides per round trip, where both count them (else null). */
      datagramsPerRt: perRt((u) => u.datagramsOut),
      sendsPerRt: perRt((u) => u.sendCalls),
      recvsPerRt: perRt((u) => u.recvCalls),
    };
  } finally {
    await Promise.all([client.exit(), server.exit()]);
  }
}
