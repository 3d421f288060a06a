// TCP ping-pong: N sockets, each carrying one 200-byte request at a time that the server echoes,
// over @quicpool/transport's TCP session streams (which are plain net.Sockets, TCP_NODELAY on).
// The baseline every QUIC figure is compared with.
import type { SessionStream } from '@quicpool/transport';
import { dialTcp, listenTcp } from '@quicpool/transport';
import type { PingPongResult } from './pingpong-harness.js';
import { runForkedPingPong } from './pingpong-harness.js';
import type { ClientRole, PingPongConfig, RoleFactory, ServerRole } from './pingpong-worker.js';
import { echo, keepBusy } from './ping-stream.js';

export interface TcpPingPongOptions {
  sockets: number;
  durationMs: number;
  /** Request and response size in bytes. Default 200. */
  payload?: number;
  warmupMs?: number;
  /** The built bench program that dispatches PINGPONG_FLAG (default: the running program). */
  workerScript?: string;
}

export async function runTcpPingPong(options: TcpPingPongOptions): Promise<PingPongResult> {
  return runForkedPingPong({
    label: `tcp ${options.sockets}`,
    workerScript: options.workerScript ?? process.argv[1] ?? '',
    serverRole: 'tcp-server',
    clientRole: 'tcp-client',
    config: { connections: options.sockets, streamsPerConnection: 1, payloadBytes: options.payload ?? 200 },
    durationMs: options.durationMs,
    warmupMs: options.warmupMs ?? 1000,
  });
}

async function tcpServer(): Promise<ServerRole> {
  // A deep backlog: 2000 clients connect at once.
  const listener = await listenTcp({ host: '127.0.0.1', port: 0, backlog: 4096 });
  listener.onSession(echo);
  return { port: listener.address().port, close: () => listener.close() };
}

async function tcpClient(config: PingPongConfig, onRoundTrip: (ms: number) => void): Promise<ClientRole> {
  const port = config.port ?? 0;
  const size = config.payloadBytes;
  const payload = Buffer.alloc(size, 0x61);
  const streams: SessionStream[] = [];
  // Connect in batches so the listen backlog never overflows (an overflow costs a 1 s SYN retry).
  for (let opened = 0; opened < config.connections; ) {
    const batch = Math.min(200, config.connections - opened);
    streams.push(...(await Promise.all(Array.from({ length: batch }, () => dialTcp({ host: '127.0.0.1', port })))));
    opened += batch;
  }
  let running = true;
  for (const stream of streams) keepBusy(stream, payload, onRoundTrip, () => running);
  return {
    close: async () => {
      running = false;
      for (const stream of streams) stream.destroy();
    },
  };
}

export const tcpRoles: Record<string, RoleFactory> = { 'tcp-server': tcpServer, 'tcp-client': tcpClient };
