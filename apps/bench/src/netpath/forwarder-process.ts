// The forwarder program (forwarder.c) as a child process: its command line, its ready line, and
// its stats (one JSON line per SIGUSR1 and one at exit), parsed into checked types.
import { startWorkerProcess } from '../process/worker-process.js';

export interface ForwarderOptions {
  readonly binary: string;
  readonly clientNs: string;
  readonly clientTun: string;
  readonly serverNs: string;
  readonly serverTun: string;
  readonly upDelayUs: number;
  readonly downDelayUs: number;
  readonly upLoss: number;
  readonly downLoss: number;
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

function object(value: unknown, what: string): Json {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error(`forwarder stats: ${what} is not an object`);
  return value as Json;
}

function num(o: Json, key: string): number {
  const v = o[key];
  if (typeof v !== 'number') throw new Error(`forwarder stats: ${key} is not a number`);
  return v;
}

function str(o: Json, key: string): string {
  const v = o[key];
  if (typeof v !== 'string') throw new Error(`forwarder stats: ${key} is not a string`);
  return v;
}

function bool(o: Json, key: string): boolean {
  const v = o[key];
  if (typeof v !== 'boolean') throw new Error(`forwarder stats: ${key} is not a boolean`);
  return v;
}

function direction(value: unknown, name: string): DirectionStats {
  const d = object(value, name);
  const tif = d.timeInForwarderUs === null ? null : object(d.timeInForwarderUs, `${name}.timeInForwarderUs`);
  const late = d.lateUs === null ? null : object(d.lateUs, `${name}.lateUs`);
  return {
    packets: num(d, 'packets'),
    bytes: num(d, 'bytes'),
    randomDrops: num(d, 'randomDrops'),
    queueDrops: num(d, 'queueDrops'),
    oversizeDrops: num(d, 'oversizeDrops'),
    writeErrors: num(d, 'writeErrors'),
    readErrors: num(d, 'readErrors'),
    rateWaitedPackets: num(d, 'rateWaitedPackets'),
    rateWaitUs: num(d, 'rateWaitUs'),
    timeInForwarderUs: tif === null ? null : { min: num(tif, 'min'), mean: num(tif, 'mean'), max: num(tif, 'max') },
    lateUs: late === null ? null : { mean: num(late, 'mean'), p50: num(late, 'p50'), p99: num(late, 'p99'), p999: num(late, 'p999'), max: num(late, 'max') },
    queued: num(d, 'queued'),
    maxQueued: num(d, 'maxQueued'),
  };
}

/** A stats line's kind ('signal' or 'exit') and content, or null when the line is not a stats line. */
export function parseStatsLine(line: string): { kind: string; stats: ForwarderStats } | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    return null;
  }
  if (typeof parsed !== 'object' || parsed === null || !('stats' in parsed)) return null;
  const o = object(parsed, 'line');
  return {
    kind: str(o, 'stats'),
    stats: {
      up: direction(o.up, 'up'),
      down: direction(o.down, 'down'),
      cpuUserUs: num(o, 'cpuUserUs'),
      cpuSysUs: num(o, 'cpuSysUs'),
      uptimeUs: num(o, 'uptimeUs'),
      sched: str(o, 'sched'),
      mlock: bool(o, 'mlock'),
    },
  };
}

function parseReady(line: string): ForwarderReady | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    return null;
  }
  if (typeof parsed !== 'object' || parsed === null || !('ready' in parsed)) return null;
  const o = object(parsed, 'ready line');
  return { pid: num(o, 'pid'), sched: str(o, 'sched'), mlock: bool(o, 'mlock'), watchStdin: bool(o, 'watchStdin') };
}

export function forwarderArgs(o: ForwarderOptions): string[] {
  const int = (v: number): string => String(Math.round(v));
  return [
    ['--client-ns', o.clientNs],
    ['--client-tun', o.clientTun],
    ['--server-ns', o.serverNs],
    ['--server-tun', o.serverTun],
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
  ].flat();
}

const STATS_TIMEOUT_MS = 2_000;

export async function startForwarder(o: ForwarderOptions): Promise<ForwarderProcess> {
  const waiting: Array<(stats: ForwarderStats) => void> = [];
  let exitStats: ForwarderStats | null = null;
  const worker = await startWorkerProcess<ForwarderReady>({
    name: 'the packet forwarder',
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
