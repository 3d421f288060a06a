import { describe, expect, it } from 'vitest';
import { parseSockstat, sampleMemory } from './proc-memory.js';
import { medianMs as median } from './first-row.js';

describe('parseSockstat', () => {
  it('reads inuse and mem of TCP and UDP', () => {
    const text = [
      'sockets: used 312',
      'TCP: inuse 25 orphan 0 tw 3 alloc 31 mem 7',
      'UDP: inuse 4 mem 12',
      'UDPLITE: inuse 0',
      'RAW: inuse 0',
      'FRAG: inuse 0 memory 0',
      '',
    ].join('\n');
    expect(parseSockstat(text)).toEqual({ tcp: { inuse: 25, memPages: 7 }, udp: { inuse: 4, memPages: 12 } });
  });

  it('reports 0 for missing lines', () => {
    expect(parseSockstat('sockets: used 1\n')).toEqual({ tcp: { inuse: 0, memPages: 0 }, udp: { inuse: 0, memPages: 0 } });
  });

  it('samples this process: an open file descriptor shows up', async () => {
    const { open } = await import('node:fs/promises');
    const before = sampleMemory();
    const handle = await open(new URL(import.meta.url), 'r');
    try {
      expect(sampleMemory().fds).toBe(before.fds + 1);
      expect(before.rssBytes).toBeGreaterThan(0);
    } finally {
      await handle.close();
    }
  });
});

describe('median', () => {
  it('takes the middle value, or the mean of the two middle ones', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(Number.isNaN(median([]))).toBe(true);
  });
});
