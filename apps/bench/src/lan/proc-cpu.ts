// CPU time of one process (user + system, all its threads) from /proc/<pid>/stat, so a pooler's
// cost per transaction can be measured from outside without instrumenting it.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

let ticksPerSecond: number | null = null;

/** Clock ticks per second of /proc's utime/stime (USER_HZ, nearly always 100). */
function clockTicks(): number {
  if (ticksPerSecond === null) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/** utime + stime of `pid` in microseconds, or null when the process (or /proc) is not there. */
export function processCpuMicros(pid: number): number | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // The command name (field 2) is in parentheses and may contain spaces: parse after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // After the name, field 3 (state) is index 0, so utime (14) is index 11 and stime (15) index 12.
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) return null;
  return ((utime + stime) * 1e6) / clockTicks();
}

/** Read and write syscalls `pid` has made so far (/proc/<pid>/io), or null when not readable. */
export function processSyscalls(pid: number): { reads: number; writes: number } | null {
  try {
    const io = readFileSync(`/proc/${pid}/io`, 'utf8');
    const reads = Number(/syscr: (\d+)/.exec(io)?.[1]);
    const writes = Number(/syscw: (\d+)/.exec(io)?.[1]);
    return Number.isFinite(reads) && Number.isFinite(writes) ? { reads, writes } : null;
  } catch {
    return null;
  }
}
