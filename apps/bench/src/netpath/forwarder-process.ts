// The forwarder program (forwarder.c) as a child process: its command line, its ready line, and
// its stats (one JSON line per SIGUSR1 and one at exit), parsed into checked types. It moves
// packets between two TUN devices (the packet path) or, as the relay, between sockets.
import { startWorkerProcess } from '../process/worker-process.js';

/** Between what the forwarder moves packets: two TUN devices, or (the relay) a local port and a target. */
export type ForwarderEnds =
  | { readonly kind: 'tun'; readonly clientNs: string; readonly clientTun: string; readonly serverNs: string; readonly serverTun: string }
  | { readonly kind: 'relay'; readonly protocol: 'tcp' | 'udp'; readonly target: { readonly host: string; readonly port: number } };

export interface ForwarderOptions {
  readonly binary: string;
  readonly ends: ForwarderEnds;
  readonly upDelayUs: number;
  readonly downDelayUs: number;
  readonly upLoss: number;
  readonly downLoss: number;
  /** Random loss for IPv4 UDP packets only (TCP crosses whole). */
  readonly lossUdpOnly?: boolean;
  readonly seed: number;
  /** Bits/s; 0 = unlimited. */
  readonly upRateBps: number;
  readonly downRateBps: number;
  /** 0 = 1 ms at the rate (at least two full packets). */
  readonly burstBytes: number;
  /** Bounds of each direction's queue (every packet held: in flight or waiting for the rate). */
  readonly queuePackets: number;
  readonly queueBytes: number;
  /** SCHED_FIFO priority; 0 = normal scheduling. */
  readonly realtimePriority: number;
}

export interface TimeSummaryUs {
  readonly min: number;
  readonly mean: number;
  readonly max: number;
}

export interface LatenessUs {
  readonly mean: number;
  readonly p50: number;
  readonly p99: number;
  readonly p999: number;
  readonly max: number;
}

/** One direction's counters ('up' = client to server). */
export interface DirectionStats {
  readonly packets: number;
  readonly bytes: number;
  readonly randomDrops: number;
  /** Tail drops: the queue was full (packets or bytes). */
  readonly queueDrops: number;
  readonly oversizeDrops: number;
  readonly writeErrors: number;
  readonly readErrors: number;
  /** Packets the rate limit held back, and for how long in total. */
  readonly rateWaitedPackets: number;
  readonly rateWaitUs: number;
  /** Each forwarded packet's release time minus its read time (null before the first packet). */
  readonly timeInForwarderUs: TimeSummaryUs | null;
  /** Release time minus due time: how late the timer let packets go (quantiles to 1 µs, capped at 4096). */
  readonly lateUs: LatenessUs | null;
  readonly queued: number;
  readonly maxQueued: number;
}

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

export interface ForwarderReady {
  readonly pid: number;
  /** The relay's listening port on 127.0.0.1 (null for the TUN forwarder). */
  readonly port: number | null;
  readonly sched: string;
  readonly mlock: boolean;
  /** False when its stdin was not a pipe: then only signals end it. */
  readonly watchStdin: boolean;
}

export interface ForwarderProcess {
  readonly pid: number;
  readonly ready: ForwarderReady;
  /** Asks for a stats line (SIGUSR1) and resolves with it. */
  stats(): Promise<ForwarderStats>;
  /** SIGTERM; resolves with the stats line it prints at exit (null if none came). */
  stop(): Promise<ForwarderStats | null>;
}

type Json = Readonly<Record<string, unknown>>;

/** One JSON object line, or null (forwarder.c prints nothing else on stdout). */
function jsonObject(line: string): Json | null {
  try {
    const v: unknown = JSON.parse(line);
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : null;
  } catch {
    return null;
  }
}

/** Throws unless each of `keys` of `o` has the type named. */
function check(o: Json, what: string, keys: Readonly<Record<string, 'number' | 'string' | 'boolean'>>): void {
  for (const [key, type] of Object.entries(keys)) if (typeof o[key] !== type) throw new Error(`forwarder ${what}: ${key} is not a ${type}`);
}

const DIRECTION_KEYS = {
  packets: 'number', bytes: 'number', randomDrops: 'number', queueDrops: 'number', oversizeDrops: 'number', writeErrors: 'number',
  readErrors: 'number', rateWaitedPackets: 'number', rateWaitUs: 'number', queued: 'number', maxQueued: 'number',
} as const;

/** A stats line's kind ('signal' or 'exit') and content, or null when the line is not a stats line. */
export function parseStatsLine(line: string): { kind: string; stats: ForwarderStats } | null {
  const o = jsonObject(line);
  if (o === null || !('stats' in o)) return null;
  check(o, 'stats', { stats: 'string', cpuUserUs: 'number', cpuSysUs: 'number', uptimeUs: 'number', sched: 'string', mlock: 'boolean' });
  for (const name of ['up', 'down'] as const) {
    const d = o[name];
    if (typeof d !== 'object' || d === null) throw new Error(`forwarder stats: ${name} is not an object`);
    check(d as Json, `stats.${name}`, DIRECTION_KEYS);
  }
  // Checked above, and timeInForwarderUs/lateUs are null or the objects forwarder.c prints.
  const { stats: kind, ...stats } = o as Json & { stats: string };
  return { kind, stats: stats as unknown as ForwarderStats };
}

function parseReady(line: string): ForwarderReady | null {
  const o = jsonObject(line);
  if (o === null || !('ready' in o)) return null;
  check(o, 'ready line', { pid: 'number', sched: 'string', mlock: 'boolean', watchStdin: 'boolean' });
  return { pid: o.pid as number, port: typeof o.port === 'number' ? o.port : null, sched: o.sched as string, mlock: o.mlock as boolean, watchStdin: o.watchStdin as boolean };
}

export function forwarderArgs(o: ForwarderOptions): string[] {
  const int = (v: number): string => String(Math.round(v));
  const e = o.ends;
  return [
    ...(e.kind === 'tun'
      ? [['--client-ns', e.clientNs], ['--client-tun', e.clientTun], ['--server-ns', e.serverNs], ['--server-tun', e.serverTun]]
      : [['--relay-protocol', e.protocol], ['--relay-target', `${e.target.host}:${e.target.port}`]]),
    ['--up-delay-us', int(o.upDelayUs)],
    ['--down-delay-us', int(o.downDelayUs)],
    ['--up-loss', String(o.upLoss)],
    ['--down-loss', String(o.downLoss)],
    ['--seed', String(o.seed)],
    ['--up-rate-bps', int(o.upRateBps)],
    ['--down-rate-bps', int(o.downRateBps)],
    ['--burst-bytes', int(o.burstBytes)],
    ['--queue-packets', int(o.queuePackets)],
    ['--queue-bytes', int(o.queueBytes)],
    ['--realtime-priority', int(o.realtimePriority)],
    o.lossUdpOnly === true ? ['--loss-udp-only'] : [],
  ].flat();
}

const STATS_TIMEOUT_MS = 2_000;

export async function startForwarder(o: ForwarderOptions): Promise<ForwarderProcess> {
  const waiting: Array<(stats: ForwarderStats) => void> = [];
  let exitStats: ForwarderStats | null = null;
  const worker = await startWorkerProcess<ForwarderReady>({
    name: o.ends.kind === 'tun' ? 'the packet forwarder' : `the ${o.ends.protocol.toUpperCase()} relay`,
    command: o.binary,
    args: forwarderArgs(o),
    startTimeoutMs: 5_000,
    ready: parseReady,
    onLine: (line) => {
      const parsed = parseStatsLine(line);
      if (parsed === null) return;
      if (parsed.kind === 'exit') {
        exitStats = parsed.stats;
      } else {
        waiting.shift()?.(parsed.stats);
      }
    },
  });
  let stopped = false;
  return {
    pid: worker.pid,
    ready: worker.ready,
    stats(): Promise<ForwarderStats> {
      if (stopped) return Promise.reject(new Error('the packet forwarder has stopped'));
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          const at = waiting.indexOf(done);
          if (at >= 0) waiting.splice(at, 1);
          reject(new Error(`the packet forwarder sent no stats within ${STATS_TIMEOUT_MS} ms`));
        }, STATS_TIMEOUT_MS);
        const done = (stats: ForwarderStats): void => {
          clearTimeout(timer);
          resolve(stats);
        };
        waiting.push(done);
        try {
          process.kill(worker.pid, 'SIGUSR1');
        } catch (error) {
          clearTimeout(timer);
          waiting.splice(waiting.indexOf(done), 1);
          reject(new Error(`the packet forwarder is gone: ${error instanceof Error ? error.message : String(error)}`));
        }
      });
    },
    async stop(): Promise<ForwarderStats | null> {
      stopped = true;
      await worker.stop();
      // Its last line can reach us after its exit: wait for the end of its output (bounded).
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([worker.outputEnded, new Promise((resolve) => (timer = setTimeout(resolve, 1_000)))]);
      clearTimeout(timer);
      return exitStats;
    },
  };
}
