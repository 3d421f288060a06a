// CPU time of one process (user + system, all its threads) from /proc/<pid>/stat, so a pooler's
// cost per transaction can be measured from outside without instrumenting it.
import { readFileSync } from 'node:fs';
import { readProcSample } from '../telemetry/proc.js';

/** utime + stime of `pid` in microseconds, and utime alone, or null when the process (or /proc) is not there. */
export function processCpuMicros(pid: number): { readonly total: number; readonly user: number } | null {
  const sample = readProcSample(pid);
  return sample === null ? null : { total: sample.cpuMs * 1000, user: sample.userMs * 1000 };
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
