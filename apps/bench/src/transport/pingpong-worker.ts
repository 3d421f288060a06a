// The child side of a ping-pong benchmark: one process plays one role (a server that echoes, or a
// client that keeps every stream busy with request/response), so `process.cpuUsage()` over the
// measured window is that side's CPU alone. The parent (pingpong-harness.ts) drives it over IPC.

import dgram from 'node:dgram';

export interface PingPongConfig {
  /** Client: connections (TCP: sockets) and streams per connection (1 for TCP). */
  connections: number;
  streamsPerConnection: number;
  payloadBytes: number;
  /** Client: where the server listens. */
  port?: number;
  /** TLS material for QUIC roles (PEM). */
  certPem?: string;
  keyPem?: string;
  caPem?: string;
}

export interface ServerRole {
  port: number;
  close(): Promise<void>;
}

export interface ClientRole {
  close(): Promise<void>;
}

/** Starts a role; a client calls `onRoundTrip(ms)` for every completed request/response. */
export type RoleFactory = (config: PingPongConfig, onRoundTrip: (latencyMs: number) => void) => Promise<ServerRole | ClientRole>;

export type ToWorker = { t: 'init'; role: string; config: PingPongConfig } | { t: 'start' } | { t: 'stop' } | { t: 'exit' };

export interface WindowReport {
  /** UDP datagrams this process sent in the window, when its role counts them (else null). */
  datagramsSent: number | null;
  cpuUs: number;
  rssBytes: number;
  roundTrips: number;
  p50Us: number;
  p99Us: number;
}

export type FromWorker =
  | { t: 'ready'; port: number }
  | { t: 'started' }
  | ({ t: 'stopped' } & WindowReport)
  | { t: 'failed'; message: string };

let datagramsSent = 0;
let countingDatagrams = false;

/**
 * For roles over a UDP library we do not control: counts every datagram this process sends by
 * wrapping dgram's send (one extra call per datagram; the worker runs nothing else).
 */
export function countDatagramsSent(): void {
  if (countingDatagrams) return;
  countingDatagrams = true;
  const send = dgram.Socket.prototype.send;
  dgram.Socket.prototype.send = function countedSend(this: dgram.Socket, ...args: unknown[]): void {
    datagramsSent++;
    (send as (...a: unknown[]) => void).apply(this, args);
  } as typeof send;
}

/** Latencies kept per window (enough for ~100k round trips/s over 10 s). */
const MAX_SAMPLES = 1 << 20;

export function runPingPongWorker(roles: Record<string, RoleFactory>): void {
  const latencies = new Float64Array(MAX_SAMPLES);
  let samples = 0;
  let roundTrips = 0;
  let counting = false;
  let cpuAtStart = process.cpuUsage();
  let datagramsAtStart = 0;
  let role: ServerRole | ClientRole | null = null;
  const send = (message: FromWorker): void => {
    process.send?.(message);
  };
  const onRoundTrip = (latencyMs: number): void => {
    if (!counting) return;
    roundTrips++;
    if (samples < MAX_SAMPLES) latencies[samples++] = latencyMs;
  };

  process.on('message', (message: ToWorker) => {
    switch (message.t) {
      case 'init': {
        const factory = roles[message.role];
        if (factory === undefined) {
          send({ t: 'failed', message: `unknown role ${message.role}` });
          return;
        }
        factory(message.config, onRoundTrip).then(
          (started) => {
            role = started;
            send({ t: 'ready', port: 'port' in started ? started.port : 0 });
          },
          (error: unknown) => send({ t: 'failed', message: error instanceof Error ? error.stack ?? error.message : String(error) }),
        );
        return;
      }
      case 'start':
        samples = 0;
        roundTrips = 0;
        counting = true;
        datagramsAtStart = datagramsSent;
        cpuAtStart = process.cpuUsage();
        send({ t: 'started' });
        return;
      case 'stop': {
        const cpu = process.cpuUsage(cpuAtStart);
        counting = false;
        const sorted = latencies.subarray(0, samples).sort();
        const at = (q: number): number => (samples === 0 ? 0 : (sorted[Math.min(samples - 1, Math.floor(q * samples))] ?? 0) * 1000);
        send({
          t: 'stopped',
          datagramsSent: countingDatagrams ? datagramsSent - datagramsAtStart : null,
          cpuUs: cpu.user + cpu.system,
          rssBytes: process.memoryUsage().rss,
          roundTrips,
          p50Us: Math.round(at(0.5)),
          p99Us: Math.round(at(0.99)),
        });
        return;
      }
      case 'exit': {
        // Exit even if a library's close hangs: the measurement is done.
        const done = (): never => process.exit(0);
        setTimeout(done, 2000).unref();
        (role?.close() ?? Promise.resolve()).then(done, done);
        return;
      }
      default: {
        const unknown: never = message;
        throw new Error(`unknown message ${JSON.stringify(unknown)}`);
      }
    }
  });
  // The parent died: nothing left to measure for.
  process.on('disconnect', () => process.exit(0));
}
