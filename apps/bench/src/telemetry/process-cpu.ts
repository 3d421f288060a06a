// CPU of the set-up's processes per interval, read from /proc by the parent (costing the measured nothing): the forwarder
// (or relay), the daemon, every Postgres process (the postmaster's children) and the machine's busy time, the rest "other".
import { clockTicksPerSecond, readProcSample, readProcText } from './proc.js';

/** postgres: the postmaster, whose children are summed. */
type ProcessPids = Readonly<Record<'forwarder' | 'pooler' | 'postgres', number | null>>;

/** CPU milliseconds of each process in an interval (null when absent or unreadable), the pooler's RSS at its end. */
export type CpuInterval = ReturnType<ProcessCpu['next']>;

/** The children of `pid` (/proc/<pid>/task/<pid>/children), or [] when unreadable. */
export function childPids(pid: number): number[] {
  return (readProcText(`/proc/${pid}/task/${pid}/children`) ?? '').trim().split(/\s+/).filter(Boolean).map(Number);
}

/** Busy CPU time of the whole machine in ms (the `cpu` line of /proc/stat), or null. */
function machineBusyMs(): number | null {
  const stat = readProcText('/proc/stat');
  if (stat === null) return null;
  const f = (stat.split('\n', 1)[0] ?? '').trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal: steal is another guest's time on a VM,
  // not this machine's work (guest time is already in user).
  const busy = (f[0] ?? 0) + (f[1] ?? 0) + (f[2] ?? 0) + (f[5] ?? 0) + (f[6] ?? 0);
  return Number.isFinite(busy) ? (busy * 1000) / clockTicksPerSecond() : null;
}

/** CPU ms so far of each process (the postmaster and each child by pid), the pooler's RSS, the machine's busy time. */
function readAll(pids: ProcessPids) {
  const postgres = new Map<number, number>();
  for (const pid of pids.postgres === null ? [] : [pids.postgres, ...childPids(pids.postgres)]) {
    const ms = readProcSample(pid)?.cpuMs;
    if (ms !== undefined) postgres.set(pid, ms);
  }
  const forwarder = pids.forwarder === null ? null : (readProcSample(pids.forwarder)?.cpuMs ?? null);
  return { forwarder, pooler: pids.pooler === null ? null : readProcSample(pids.pooler), postgres, machine: machineBusyMs() };
}

/** Per-interval deltas for a fixed set of processes; the first interval starts at construction. */
export class ProcessCpu {
  private last: ReturnType<typeof readAll>;

  constructor(private readonly pids: ProcessPids) {
    this.last = readAll(pids);
  }

  next() {
    const now = readAll(this.pids);
    const before = this.last;
    this.last = now;
    const delta = (a: number | null, b: number | null): number | null => (a === null || b === null ? null : Math.max(0, a - b));
    // A backend that started in the interval counts from its start; one that ended is lost (at most one interval of it;
    // the pooler keeps its server connections open).
    const postgres = [...now.postgres].reduce((sum, [pid, ms]) => sum + Math.max(0, ms - (before.postgres.get(pid) ?? 0)), 0);
    return {
      forwarderMs: delta(now.forwarder, before.forwarder),
      poolerMs: delta(now.pooler?.cpuMs ?? null, before.pooler?.cpuMs ?? null),
      poolerRssBytes: now.pooler?.rssBytes ?? null,
      postgresMs: this.pids.postgres === null ? null : postgres,
      /** Every CPU's busy time (user, nice, system, irq, softirq) in the interval. */
      machineMs: delta(now.machine, before.machine),
    };
  }
}
