// CPU time of the calling thread (for SHOW WORKERS and the per-worker metrics): in a worker
// thread, process.cpuUsage() counts the whole process, so it is read from the kernel's own
// account of this thread. Linux only; null elsewhere.
import { readFileSync } from 'node:fs';

/** Clock ticks per second of /proc's utime and stime (USER_HZ: 100 on every Linux Node runs on). */
const TICKS_PER_SECOND = 100;

/** This thread's user + system CPU time so far (ms), or null when the kernel does not say. */
export function threadCpuMs(): number | null {
  try {
    const stat = readFileSync('/proc/thread-self/stat', 'utf8');
    // Fields after the command name (which may hold spaces) start at the last ')': utime is the 14th field overall.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    return Number.isFinite(utime) && Number.isFinite(stime) ? ((utime + stime) * 1000) / TICKS_PER_SECOND : null;
  } catch {
    return null;
  }
}
