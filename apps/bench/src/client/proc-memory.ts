// What a process and the kernel hold: this process's RSS and fds, and the kernel's socket memory and socket counts from
// /proc/net/sockstat (system-wide: both ends of a loopback connection count). Linux only.
import { readFileSync } from 'node:fs';
import { countProcFds } from '../telemetry/proc.js';

export type MemorySample = ReturnType<typeof sampleMemory>;

/** TCP and UDP `inuse` (sockets) and `mem` (pages of socket buffer memory) from the text of /proc/net/sockstat. */
export function parseSockstat(text: string) {
  const line = (proto: string): { inuse: number; memPages: number } => {
    const m = new RegExp(`^${proto}:(.*)$`, 'm').exec(text);
    const field = (name: string): number => {
      const f = m === null ? null : new RegExp(`\\b${name} (\\d+)`).exec(m[1] ?? '');
      return f === null ? 0 : Number(f[1]);
    };
    return { inuse: field('inuse'), memPages: field('mem') };
  };
  return { tcp: line('TCP'), udp: line('UDP') };
}

export function sampleMemory() {
  const mem = process.memoryUsage();
  return {
    rssBytes: mem.rss,
    heapUsedBytes: mem.heapUsed,
    /** Memory of Buffers and other C++ objects tied to JS objects (process.memoryUsage().external). */
    externalBytes: mem.external,
    fds: countProcFds('self') ?? Number.NaN,
    sockstat: parseSockstat(readFileSync('/proc/net/sockstat', 'utf8')),
  };
}
