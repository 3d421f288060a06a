// CPU of the set-up's processes per interval, read from /proc by the bench's parent process (so
// that measuring costs the measured processes nothing): the packet forwarder (or relay), the
// quicpool daemon, every process of the Postgres server (the postmaster's children: its backends
// and background workers), and the whole machine's busy time, from which the rest is "other".
import { readFileSync } from 'node:fs';
import { clockTicksPerSecond, readProcSample } from './proc.js';

export interface ProcessPids {
  readonly forwarder: number | null;
  readonly pooler: number | null;
  /** The postmaster: its children are summed. */
  readonly postgres: number | null;
}

export interface CpuInterval {
  /** CPU milliseconds in the interval; null when the process is absent or unreadable. */
  readonly forwarderMs: number | null;
  readonly poolerMs: number | null;
  readonly poolerRssBytes: number | null;
  readonly postgresMs: number | null;
  /** Every CPU's busy time (user, nice, system, irq, softirq) in the interval. */
  readonly machineMs: number | null;
}

/** The children of `pid` (/proc/<pid>/task/<pid>/children), or [] when unreadable. */
export function childPids(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** Busy CPU time of the whole machine in ms (the `cpu` line of /proc/stat), or null. */
export function machineBusyMs(): number | null {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
    const f = line.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal: steal is another guest's time on a VM,
    // not this machine's work (guest time is already in user).
    const busy = (f[0] ?? 0) + (f[1] ?? 0) + (f[2] ?? 0) + (f[5] ?? 0) + (f[6] ?? 0);
    return Number.isFinite(busy) ? (busy * 1000) / clockTicksPerSecond() : null;
  } catch {
    return null;
  }
}

/** Per-interval deltas for a fixed set of processes; the first interval starts at construction. */
export class ProcessCpu {
  private last: { forwarder: number | null; pooler: number | null; postgres: Map<number, number>; machine: number | null };

  constructor(private readonly pids: ProcessPids) {
    this.last = this.read();
  }

  private read(): { forwarder: number | null; pooler: number | null; postgres: Map<number, number>; machine: number | null } {
    const cpu = (pid: number | null): number | null => (pid === null ? null : (readProcSample(pid)?.cpuMs ?? null));
    const postgres = new Map<number, number>();
    if (this.pids.postgres !== null) {
      for (const pid of [this.pids.postgres, ...childPids(this.pids.postgres)]) {
        const ms = cpu(pid);
        if (ms !== null) postgres.set(pid, ms);
      }
    }
    return { forwarder: cpu(this.pids.forwarder), pooler: cpu(this.pids.pooler), postgres, machine: machineBusyMs() };
  }

  /** CPU since the previous call (or construction). */
  next(): CpuInterval {
    const now = this.read();
    const before = this.last;
    this.last = now;
    const delta = (a: number | null, b: number | null): number | null => (a === null || b === null ? null : Math.max(0, a - b));
    let postgresMs: number | null = null;
    if (this.pids.postgres !== null) {
      postgresMs = 0;
      // A backend that started in the interval counts from its start; one that ended is lost
      // (at most one interval of it; the pooler keeps its server connections open).
      for (const [pid, ms] of now.postgres) postgresMs += Math.max(0, ms - (before.postgres.get(pid) ?? 0));
    }
    return {
      forwarderMs: delta(now.forwarder, before.forwarder),
      poolerMs: delta(now.pooler, before.pooler),
      poolerRssBytes: this.pids.pooler === null ? null : (readProcSample(this.pids.pooler)?.rssBytes ?? null),
      postgresMs,
      machineMs: delta(now.machine, before.machine),
    };
  }
}
