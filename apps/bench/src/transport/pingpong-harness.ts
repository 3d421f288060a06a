// The parent side of a ping-pong benchmark: forks a server worker and a client worker (the same
// bench program, started with PINGPONG_FLAG), lets the client warm up, then measures one window:
// round trips counted by the client, CPU and RSS reported by each side for that window.
import { performance } from 'node:perf_hooks';
import type { FromWorker, PingPongConfig, ToWorker, WindowReport } from './pingpong-worker.js';
import { PINGPONG_FLAG } from '../commands/worker-flags.js';
import { IpcChild } from '../process/ipc-child.js';
import { round1 } from '../report/round.js';

export interface PingPongResult {
  label: string;
  roundTrips: number;
  roundTripsPerSec: number;
  /** CPU time (user + system) per round trip, client process and server process. */
  usPerRtClient: number;
  usPerRtServer: number;
  p50Us: number;
  p99Us: number;
  rssClientMB: number;
  rssServerMB: number;
  /** Datagrams both sides sent per round trip, when the roles count them (UDP-based), else null. */
  datagramsPerRt: number | null;
}

export interface HarnessOptions {
  label: string;
  /** The built bench program to fork (it must call runPingPongWorker when given PINGPONG_FLAG). */
  workerScript: string;
  serverRole: string;
  clientRole: string;
  config: Omit<PingPongConfig, 'port'>;
  durationMs: number;
  warmupMs: number;
}

const MB = 1024 * 1024;

export async function runForkedPingPong(options: HarnessOptions): Promise<PingPongResult> {
  const worker = (role: string): IpcChild<ToWorker, FromWorker> => new IpcChild(options.workerScript, [PINGPONG_FLAG, role], []);
  const server = worker(options.serverRole);
  const client = worker(options.clientRole);
  try {
    const { port } = await server.request({ t: 'init', role: options.serverRole, config: options.config }, 'ready');
    await client.request({ t: 'init', role: options.clientRole, config: { ...options.config, port } }, 'ready');
    await new Promise((resolve) => setTimeout(resolve, options.warmupMs));
    await server.request({ t: 'start' }, 'started');
    await client.request({ t: 'start' }, 'started');
    const started = performance.now();
    await new Promise((resolve) => setTimeout(resolve, options.durationMs));
    const clientReport: WindowReport = await client.request({ t: 'stop' }, 'stopped');
    const elapsedMs = performance.now() - started;
    const serverReport: WindowReport = await server.request({ t: 'stop' }, 'stopped');
    const rts = Math.max(1, clientReport.roundTrips);
    return {
      label: options.label,
      roundTrips: clientReport.roundTrips,
      roundTripsPerSec: Math.round((clientReport.roundTrips * 1000) / elapsedMs),
      usPerRtClient: round1(clientReport.cpuUs / rts),
      usPerRtServer: round1(serverReport.cpuUs / rts),
      p50Us: clientReport.p50Us,
      p99Us: clientReport.p99Us,
      rssClientMB: Math.round(clientReport.rssBytes / MB),
      rssServerMB: Math.round(serverReport.rssBytes / MB),
      datagramsPerRt:
        clientReport.datagramsSent === null || serverReport.datagramsSent === null
          ? null
          : Math.round(((clientReport.datagramsSent + serverReport.datagramsSent) / rts) * 100) / 100,
    };
  } finally {
    await Promise.all([client.exit(), server.exit()]);
  }
}
