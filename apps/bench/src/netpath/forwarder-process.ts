// The forwarder program (forwarder.c) as a child process, between two TUN devices (the packet path) or sockets (the relay):
// its command line, its ready line, and its stats (a JSON line per SIGUSR1 and at exit), parsed into checked types.
import { setTimeout as sleep } from 'node:timers/promises';
import { jsonLine, startWorkerProcess } from '../process/worker-process.js';

/** Between what the forwarder moves packets: two TUN devices, or (the relay) a local port and a target. */
export type ForwarderEnds =
  | { readonly kind: 'tun'; readonly clientNs: string; readonly clientTun: string; readonly serverNs: string; readonly serverTun: string }
  | { readonly kind: 'relay'; readonly protocol: 'tcp' | 'udp'; readonly target: { readonly host: string; readonly port: number } };

/** A value per direction ('up' = client to server). */
export type UpDown = Readonly<{ up: number; down: number }>;

export interface ForwarderOptions {
  readonly binary: string;
  readonly ends: ForwarderEnds;
  readonly delayMs: UpDown;
  readonly loss: UpDown;
  readonly lossUdpOnly?: boolean;
  readonly seed: number;
  /** Bits/s; 0 (default) = unlimited. The burst is forwarder.c's default: 1 ms at the rate, at least two full packets. */
  readonly rateBps?: UpDown;
  /** Bounds of each direction's queue (every packet held: in flight or waiting for the rate). Default 4096 packets, 6 MiB. */
  readonly queuePackets?: number;
  readonly queueBytes?: number;
  readonly realtimePriority: number;
}

// A direction's counters, as forwarder.c prints them (queueDrops: tail drops; rateWait*: what the rate limit held back).
const DIRECTION_COUNTERS = [
  'packets', 'bytes', 'randomDrops', 'queueDrops', 'oversizeDrops', 'writeErrors', 'readErrors',
  'rateWaitedPackets', 'rateWaitUs', 'queued', 'maxQueued',
] as const;

/** One direction's counters ('up' = client to server). */
export type DirectionStats = Readonly<Record<(typeof DIRECTION_COUNTERS)[number], number>> & {
  /** Each forwarded packet's release time minus its read time (null before the first packet). */
  readonly timeInForwarderUs: { readonly min: number; readonly mean: number; readonly max: number } | null;
  /** Release time minus due time: how late the timer let packets go (quantiles to 1 µs, capped at 4096). */
  readonly lateUs: { readonly mean: number; readonly p50: number; readonly p99: number; readonly p999: number; readonly max: number } | null;
};

export interface ForwarderStats {
  readonly up: DirectionStats;
  readonly down: DirectionStats;
  /** The forwarder's own CPU time (getrusage) since it started. */
  readonly cpuUserUs: number;
  readonly cpuSysUs: number;
  readonly uptimeUs: number;
  /** 'fifo:<priority>' when real-time scheduling worked, else 'other (reason)'. */
  readonly sched: string;
  readonly mlock: boolean;
}

type Json = Readonly<Record<string, unknown>>;

/** Throws unless each of `keys` of `o` has the type named. */
function check(o: Json, what: string, keys: Readonly<Record<string, 'number' | 'string' | 'boolean'>>): void {
  for (const [key, type] of Object.entries(keys)) if (typeof o[key] !== type) throw new Error(`forwarder ${what}: ${key} is not a ${type}`);
}

/** A stats line's kind ('signal' or 'exit') and content, or null when the line is not a stats line. */
function parseStatsLine(line: string): { kind: string; stats: ForwarderStats } | null {
  const o = jsonLine(line);
  if (o === null || !('stats' in o)) return null;
  check(o, 'stats', { stats: 'string', cpuUserUs: 'number', cpuSysUs: 'number', uptimeUs: 'number', sched: 'string', mlock: 'boolean' });
  for (const name of ['up', 'down'] as const) {
    const d = o[name];
    if (typeof d !== 'object' || d === null) throw new Error(`forwarder stats: ${name} is not an object`);
    check(d as Json, `stats.${name}`, Object.fromEntries(DIRECTION_COUNTERS.map((key) => [key, 'number' as const])));
    // Null before the first packet, else the timings forwarder.c prints.
    const timing = (key: string, fields: readonly string[]): void => {
      const t = (d as Json)[key];
      if (t !== null) check(typeof t === 'object' ? (t as Json) : {}, `stats.${name}.${key}`, Object.fromEntries(fields.map((f) => [f, 'number' as const])));
    };
    timing('timeInForwarderUs', ['min', 'mean', 'max']);
    timing('lateUs', ['mean', 'p50', 'p99', 'p999', 'max']);
  }
  const { stats: kind, ...stats } = o as Json & { stats: string };
  return { kind, stats: stats as unknown as ForwarderStats };
}

/** The ready line's fields we use; the relay's listening port on 127.0.0.1 (null for the TUN forwarder). */
function parseReady(line: string): { port: number | null; sched: string; mlock: boolean } | null {
  const o = jsonLine(line);
  if (o === null || !('ready' in o)) return null;
  check(o, 'ready line', { pid: 'number', sched: 'string', mlock: 'boolean', watchStdin: 'boolean' });
  return { port: typeof o.port === 'number' ? o.port : null, sched: o.sched as string, mlock: o.mlock as boolean };
}

function forwarderArgs(o: ForwarderOptions): string[] {
  const int = (v: number): string => String(Math.round(v));
  const e = o.ends;
  return [
    ...(e.kind === 'tun'
      ? [['--client-ns', e.clientNs], ['--client-tun', e.clientTun], ['--server-ns', e.serverNs], ['--server-tun', e.serverTun]]
      : [['--relay-protocol', e.protocol], ['--relay-target', `${e.target.host}:${e.target.port}`]]),
    ['--up-delay-us', int(o.delayMs.up * 1000)],
    ['--down-delay-us', int(o.delayMs.down * 1000)],
    ['--up-loss', String(o.loss.up)],
    ['--down-loss', String(o.loss.down)],
    ['--seed', String(o.seed)],
    ['--up-rate-bps', int(o.rateBps?.up ?? 0)],
    ['--down-rate-bps', int(o.rateBps?.down ?? 0)],
    ['--queue-packets', int(o.queuePackets ?? 4096)],
    ['--queue-bytes', int(o.queueBytes ?? 6 << 20)],
    ['--realtime-priority', int(o.realtimePriority)],
    o.lossUdpOnly === true ? ['--loss-udp-only'] : [],
  ].flat();
}

const STATS_TIMEOUT_MS = 2_000;

export type ForwarderProcess = Awaited<ReturnType<typeof startForwarder>>;

export async function startForwarder(o: ForwarderOptions) {
  const waiting: Array<(stats: ForwarderStats) => void> = [];
  let exitStats: ForwarderStats | null = null;
  const worker = await startWorkerProcess({
    name: o.ends.kind === 'tun' ? 'the packet forwarder' : `the ${o.ends.protocol.toUpperCase()} relay`,
    command: o.binary,
    args: forwarderArgs(o),
    startTimeoutMs: 5_000,
    ready: parseReady,
    onLine: (line) => {
      const parsed = parseStatsLine(line);
      if (parsed === null) return;
      if (parsed.kind === 'exit') exitStats = parsed.stats;
      else waiting.shift()?.(parsed.stats);
    },
  });
  let stopped = false;
  return {
    pid: worker.pid,
    ready: worker.ready,
    /** Asks for a stats line (SIGUSR1) and resolves with it. */
    stats(): Promise<ForwarderStats> {
      if (stopped) return Promise.reject(new Error('the packet forwarder has stopped'));
      return new Promise((resolve, reject) => {
        const fail = (message: string): void => {
          clearTimeout(timer);
          const at = waiting.indexOf(done);
          if (at >= 0) waiting.splice(at, 1);
          reject(new Error(message));
        };
        const timer = setTimeout(() => fail(`the packet forwarder sent no stats within ${STATS_TIMEOUT_MS} ms`), STATS_TIMEOUT_MS);
        const done = (stats: ForwarderStats): void => {
          clearTimeout(timer);
          resolve(stats);
        };
        waiting.push(done);
        try {
          process.kill(worker.pid, 'SIGUSR1');
        } catch (error) {
          fail(`the packet forwarder is gone: ${error instanceof Error ? error.message : String(error)}`);
        }
      });
    },
    /** SIGTERM; resolves with the stats line it prints at exit (null if none came). */
    async stop(): Promise<ForwarderStats | null> {
      stopped = true;
      await worker.stop();
      // Its last line can reach us after its exit: wait for the end of its output (bounded).
      await Promise.race([worker.outputEnded, sleep(1_000, undefined, { ref: false })]);
      return exitStats;
    },
  };
}
