// Reads a process's CPU time and RSS from /proc, as the original benchmark did, so the set-up's other processes are measured
// from outside. Linux only: elsewhere, or for a process gone, the readers return null and the CSV columns stay empty.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** f(), or null when it throws (a /proc entry gone or another user's, not Linux, a command missing or failing). */
export function orNull<T>(f: () => T): T | null {
  try {
    return f();
  } catch {
    return null;
  }
}

const confCache = new Map<string, number>();

/** A positive number from `getconf NAME` (memoized), or `fallback` when it cannot be read. */
export function getconfNumber(name: string, fallback: number): number {
  let value = confCache.get(name);
  if (value === undefined) {
    const read = Number(orNull(() => execFileSync('getconf', [name], { encoding: 'utf8', timeout: 2000 }).trim()));
    value = Number.isFinite(read) && read > 0 ? read : fallback;
    confCache.set(name, value);
  }
  return value;
}

/** Kernel clock ticks per second (USER_HZ), what /proc/<pid>/stat counts CPU time in; 100 on every mainstream Linux architecture. */
export const clockTicksPerSecond = (): number => getconfNumber('CLK_TCK', 100);

/** The text of a /proc file, or null when it cannot be read (gone, not Linux, another user's). */
export const readProcText = (path: string): string | null => orNull(() => readFileSync(path, 'utf8'));

/** utime and stime (ticks) from /proc/<pid>/stat; counted from the last ')', as the command name may hold spaces and parentheses. */
export function parseStatTimes(stat: string): { readonly user: number; readonly system: number } | null {
  const close = stat.lastIndexOf(')');
  if (close < 0) return null;
  // After ") " the first field is field 3 (state); utime is field 14, stime field 15.
  const fields = stat.slice(close + 2).trim().split(/\s+/);
  const user = Number(fields[11]);
  const system = Number(fields[12]);
  if (!Number.isFinite(user) || !Number.isFinite(system)) return null;
  return { user, system };
}

/** The state letter (field 3: R, S, D, Z for a zombie, ...) from the text of /proc/<pid>/stat. */
export function parseStatState(stat: string): string | null {
  const close = stat.lastIndexOf(')');
  const state = close < 0 ? '' : stat.charAt(close + 2);
  return state === '' ? null : state;
}

/** VmRSS in bytes from the text of /proc/<pid>/status. */
export function parseStatusRssBytes(status: string): number | null {
  const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
  return match === null ? null : Number(match[1]) * 1024;
}

/** One sample of a process, or null when it cannot be read (gone, not Linux). */
export function readProcSample(pid: number) {
  const stat = readProcText(`/proc/${pid}/stat`);
  const status = stat === null ? null : readProcText(`/proc/${pid}/status`);
  const times = stat === null ? null : parseStatTimes(stat);
  const rss = status === null ? null : parseStatusRssBytes(status);
  if (times === null || rss === null) return null;
  const ms = 1000 / clockTicksPerSecond();
  return { cpuMs: (times.user + times.system) * ms, userMs: times.user * ms, rssBytes: rss };
}

/** Read and write syscalls `pid` has made so far (/proc/<pid>/io), or null when not readable. */
export function processSyscalls(pid: number): { reads: number; writes: number } | null {
  const io = readProcText(`/proc/${pid}/io`) ?? '';
  const reads = Number(/syscr: (\d+)/.exec(io)?.[1]);
  const writes = Number(/syscw: (\d+)/.exec(io)?.[1]);
  return Number.isFinite(reads) && Number.isFinite(writes) ? { reads, writes } : null;
}

/** How many file descriptors `pid` (or this process: 'self') has open, or null when unreadable; cheap (no readlink). */
export const countProcFds = (pid: number | 'self'): number | null => orNull(() => readdirSync(`/proc/${pid}/fd`).length);

/** How many of these /proc/<pid>/fd link targets are sockets (TCP, UDP, unix: links named `socket:[inode]`). */
export const countSocketLinks = (targets: readonly string[]): number => targets.filter((t) => t.startsWith('socket:[')).length;

/** Open descriptors of `pid` (/proc/<pid>/fd) and how many are sockets, or null; one closed before its readlink is not counted. */
export function readProcFds(pid: number): { readonly fds: number; readonly sockets: number } | null {
  const names = orNull(() => readdirSync(`/proc/${pid}/fd`));
  if (names === null) return null;
  const targets = names.flatMap((name) => orNull(() => readlinkSync(`/proc/${pid}/fd/${name}`)) ?? []);
  return { fds: targets.length, sockets: countSocketLinks(targets) };
}

/** The soft limit on open files from the text of /proc/<pid>/limits (Infinity: unlimited). */
export function parseOpenFileLimit(limits: string): number | null {
  const m = /^Max open files\s+(\d+|unlimited)/m.exec(limits);
  if (m === null) return null;
  return m[1] === 'unlimited' ? Number.POSITIVE_INFINITY : Number(m[1]);
}

/** This process's soft limit on open files (children inherit it), or null when it cannot be read. */
export function openFileLimit(): number | null {
  const limits = readProcText('/proc/self/limits');
  return limits === null ? null : parseOpenFileLimit(limits);
}
