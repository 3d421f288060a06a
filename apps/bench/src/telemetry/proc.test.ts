import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { childPids, ProcessCpu } from './process-cpu.js';
import { countSocketLinks, parseOpenFileLimit, parseStatState, parseStatTimes, parseStatusRssBytes, readProcFds, readProcSample } from './proc.js';

describe('/proc reader', () => {
  it('parses utime+stime after a command name with spaces and parentheses', () => {
    const stat = '4242 (my (odd) proc) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 75 0 0 20 0 11 0 12345 1000000 2000 18446744073709551615';
    expect(parseStatTimes(stat)).toEqual({ user: 250, system: 75 });
    expect(parseStatTimes('garbage')).toBeNull();
  });

  it('reads the state letter after a command name with parentheses', () => {
    expect(parseStatState('4242 (my (odd) proc) S 1 4242')).toBe('S');
    expect(parseStatState('77 (forwarder) Z 1 77')).toBe('Z');
    expect(parseStatState('garbage')).toBeNull();
  });

  it('parses VmRSS in kB', () => {
    expect(parseStatusRssBytes('Name:\tnode\nVmPeak:\t 999 kB\nVmRSS:\t   81920 kB\nThreads:\t7\n')).toBe(81920 * 1024);
    expect(parseStatusRssBytes('Name:\tkthread\n')).toBeNull();
  });

  it.runIf(process.platform === 'linux')('reads this process consistently with Node', () => {
    const sample = readProcSample(process.pid);
    expect(sample).not.toBeNull();
    const rss = process.memoryUsage.rss();
    expect(sample!.rssBytes).toBeGreaterThan(rss / 2);
    expect(sample!.rssBytes).toBeLessThan(rss * 2);
    const cpu = process.cpuUsage();
    // /proc counts whole ticks (10 ms), Node microseconds: equal within a few ticks.
    expect(Math.abs(sample!.cpuMs - (cpu.user + cpu.system) / 1000)).toBeLessThan(200);
    expect(Math.abs(sample!.userMs - cpu.user / 1000)).toBeLessThan(200);
  });

  it.runIf(process.platform === 'linux')('gives per-interval CPU of the set-up\'s processes, a postmaster\'s children summed', async () => {
    const child = spawn(process.execPath, ['-e', 'const end = Date.now() + 300; while (Date.now() < end);']);
    await new Promise((r) => setTimeout(r, 50));
    expect(childPids(process.pid)).toContain(child.pid);
    // This process stands in for a postmaster: its child's spin is summed into "postgres".
    const cpu = new ProcessCpu({ forwarder: process.pid, pooler: null, postgres: process.pid });
    await new Promise((r) => child.once('exit', r));
    const d = cpu.next();
    expect(d.forwarderMs).toBeGreaterThanOrEqual(0);
    expect(d.poolerMs).toBeNull();
    expect(d.postgresMs).toBeGreaterThanOrEqual(0);
    expect(d.machineMs).toBeGreaterThanOrEqual(0);
  });

  it('returns null for a process that does not exist', () => {
    expect(readProcSample(2 ** 22 + 12345)).toBeNull();
    expect(new ProcessCpu({ forwarder: 2 ** 22 + 12345, pooler: null, postgres: null }).next().forwarderMs).toBeNull();
  });

  it('counts the socket links among fd targets', () => {
    expect(countSocketLinks(['/dev/null', 'socket:[4242]', 'pipe:[7]', 'anon_inode:[eventpoll]', 'socket:[4243]', '/tmp/socket:[x]'])).toBe(2);
    expect(countSocketLinks([])).toBe(0);
  });

  it('reads the soft open-file limit', () => {
    const limits = 'Limit                     Soft Limit           Hard Limit           Units\nMax processes             63435                63435                processes\nMax open files            20000                1048576              files\n';
    expect(parseOpenFileLimit(limits)).toBe(20000);
    expect(parseOpenFileLimit('Max open files            unlimited            unlimited            files\n')).toBe(Number.POSITIVE_INFINITY);
    expect(parseOpenFileLimit('Max processes 10 10 processes\n')).toBeNull();
  });

  it.runIf(process.platform === 'linux')('sees a listening socket of this process among its fds', async () => {
    const before = readProcFds(process.pid);
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const open = readProcFds(process.pid);
      expect(open!.sockets).toBe(before!.sockets + 1);
      expect(open!.fds).toBe(before!.fds + 1);
    } finally {
      await new Promise((r) => server.close(r));
    }
    expect(readProcFds(2 ** 22 + 12345)).toBeNull();
  });
});
