// One side of a ping-pong, a server that echoes or a client keeping every stream busy, over one window. A forked worker plays
// one side alone, so its cpuUsage() is that side's CPU; pingpong-harness.ts drives it over IPC, or plays the QUIC client.
import type { UdpIoKind } from '@quicpool/transport';

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
  /** Our QUIC endpoint's UDP I/O path. */
  udpIo?: UdpIoKind;
}

/** What a role over UDP has counted so far in its process. */
export interface UdpCounters {
  datagramsOut: number;
  /** Send and receive system calls, where the role can count them (our endpoint), else null. */
  sendCalls: number | null;
  recvCalls: number | null;
  /** The I/O path the endpoint really used, where the role chooses one. */
  io: UdpIoKind | null;
}

export interface Role {
  port?: number;
  close(): Promise<void>;
  /** Roles over UDP: their counters so far. */
  udpCounters?(): UdpCounters | Promise<UdpCounters>;
}

/** Starts a role; a client calls `onRoundTrip(ms)` for every completed request/response. */
export type RoleFactory = (config: PingPongConfig, onRoundTrip: (latencyMs: number) => void) => Promise<Role>;

export type ToWorker = { t: 'init'; role: string; config: PingPongConfig } | { t: 'start' } | { t: 'stop' } | { t: 'exit' };

export type FromWorker =
  | { t: 'ready'; port: number }
  | { t: 'started' }
  | ({ t: 'stopped' } & Awaited<ReturnType<PingPongSide['stop']>>)
  | { t: 'failed'; message: string };

const since = (now: number | null, then: number | null): number | null => (now === null || then === null ? null : now - then);

/** One side in this process; the harness drives a forked one through the same four calls over IPC. */
export class PingPongSide {
  private readonly latencies: Float64Array;
  private samples = 0;
  private roundTrips = 0;
  private counting = false;
  private cpuAtStart = process.cpuUsage();
  private udpAtStart: UdpCounters | null = null;
  private role: Role | null = null;

  /** `maxSamples`: the latencies kept per window. */
  constructor(private readonly roles: Readonly<Record<string, RoleFactory>>, maxSamples: number) {
    this.latencies = new Float64Array(maxSamples);
  }

  /** Starts the role; resolves to its port (0 for a client). */
  async init(name: string, config: PingPongConfig): Promise<number> {
    const factory = this.roles[name];
    if (factory === undefined) throw new Error(`unknown role ${name}`);
    this.role = await factory(config, (latencyMs) => {
      if (!this.counting) return;
      this.roundTrips++;
      if (this.samples < this.latencies.length) this.latencies[this.samples++] = latencyMs;
    });
    return this.role.port ?? 0;
  }

  async start(): Promise<void> {
    this.udpAtStart = (await this.role?.udpCounters?.()) ?? null;
    this.samples = 0;
    this.roundTrips = 0;
    this.counting = true;
    this.cpuAtStart = process.cpuUsage();
  }

  async stop() {
    const cpu = process.cpuUsage(this.cpuAtStart);
    this.counting = false;
    const now = await this.role?.udpCounters?.();
    const then = this.udpAtStart;
    const udp = now === undefined || then === null ? null : {
      datagramsOut: now.datagramsOut - then.datagramsOut,
      sendCalls: since(now.sendCalls, then.sendCalls),
      recvCalls: since(now.recvCalls, then.recvCalls),
      io: now.io,
    };
    const n = this.samples;
    const sorted = this.latencies.subarray(0, n).sort();
    const at = (q: number): number => (n === 0 ? 0 : (sorted[Math.min(n - 1, Math.floor(q * n))] ?? 0) * 1000);
    return {
      cpuUs: cpu.user + cpu.system,
      rssBytes: process.memoryUsage().rss,
      roundTrips: this.roundTrips,
      p50Us: Math.round(at(0.5)),
      p99Us: Math.round(at(0.99)),
      /** The role's UDP counters over the window, when it counts them. */
      udp,
    };
  }

  exit(): Promise<void> {
    return this.role?.close() ?? Promise.resolve();
  }
}

/** Latencies a forked worker keeps per window (enough for ~100k round trips/s over 10 s). */
const MAX_SAMPLES = 1 << 20;

/** The forked worker: plays the side its parent asks for over IPC. */
export function runPingPongWorker(roles: Readonly<Record<string, RoleFactory>>): void {
  const side = new PingPongSide(roles, MAX_SAMPLES);
  const send = (message: FromWorker): void => void process.send?.(message);
  const fail = (error: unknown): void => send({ t: 'failed', message: error instanceof Error ? error.stack ?? error.message : String(error) });
  const reply = (answer: Promise<FromWorker>): void => void answer.then(send, fail);
  process.on('message', (message: ToWorker) => {
    switch (message.t) {
      case 'init':
        return reply(side.init(message.role, message.config).then((port) => ({ t: 'ready', port })));
      case 'start':
        return reply(side.start().then(() => ({ t: 'started' })));
      case 'stop':
        return reply(side.stop().then((report) => ({ t: 'stopped', ...report })));
      case 'exit': {
        // Exit even if a library's close hangs: the measurement is done.
        const done = (): never => process.exit(0);
        setTimeout(done, 2000).unref();
        side.exit().then(done, done);
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
