// What a process and the kernel hold: this process's RSS and open file descriptors, and the
// kernel's socket buffer memory and socket counts from /proc/net/sockstat (system-wide, so both
// ends of a loopback connection count). Linux only.
import { readFileSync } from 'node:fs';
import { countProcFds, getconfNumber } from '../telemetry/proc.js';

export interface SockstatLine {
  readonly inuse: number;
  /** Pages of socket buffer memory. */
  readonly memPages: number;
}

export interface Sockstat {
  readonly tcp: SockstatLine;
  readonly udp: SockstatLine;
}

/** TCP and UDP `inuse` and `mem` from the text of /proc/net/sockstat. */
export function parseSockstat(text: string): Sockstat {
  const line = (proto: string): SockstatLine => {
    const m = new RegExp(`^${proto}:(.*)$`, 'm').exec(text);
    const field = (name: string): number => {
      const f = m === null ? null : new RegExp(`\\b${name} (\\d+)`).exec(m[1] ?? '');
      return f === null ? 0 : Number(f[1]);
    };
    return { inuse: field('inuse'), memPages: field('mem') };
  };
  return { tcp: line('TCP'), udp: line('UDP') };
}

/** Bytes per memory page (what /proc/net/sockstat's `mem` counts in). */
export function pageBytes(): number {
  return getconfNumber('PAGESIZE', 4096);
}

export interface MemorySample {
  readonly rssBytes: number;
  readonly heapUsedBytes: number;
  /** Memory of Buffers and other C++ objects tied to JS objects (process.memoryUsage().external). */
  readonly externalBytes: number;
  readonly fds: number;
  readonly sockstat: Sockstat;
}

export function sampleMemory(): MemorySample {
  const mem = process.memoryUsage();
  return {
    rssBytes: mem.rss,
    heapUsedBytes: mem.heapUsed,
    externalBytes: mem.external,
    fds: countProcFds('self') ?? Number.NaN,
    sockstat: parseSockstat(readFileSync('/proc/net/sockstat', 'utf8')),
  };
}
