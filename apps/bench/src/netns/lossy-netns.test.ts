// The lossy namespace on its own: built, rules added, counters readable, and gone after close().
// Without root or iptables it must refuse with the reason instead.
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { createLossyNetns, leftoverNetns, netnsUnavailableReason } from './lossy-netns.js';

const reason = netnsUnavailableReason();

describe('lossy network namespace', () => {
  it('is built with drop rules and deleted by close(), or refused with the reason', () => {
    if (reason !== null) {
      expect(() => createLossyNetns(0.01)).toThrow(reason);
      return;
    }
    const ns = createLossyNetns(0.01);
    try {
      expect(ns.name).toMatch(new RegExp(`^qpbench-${process.pid}-\\d+$`));
      expect(execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })).toContain(ns.name);
      ns.dropOnPort(40_000);
      expect(ns.dropped()).toEqual({ up: 0, down: 0 }); // rules in place, no traffic yet
      const rules = execFileSync('ip', ['netns', 'exec', ns.name, 'iptables', '-S'], { encoding: 'utf8' });
      expect(rules).toMatch(/-p tcp -m tcp --dport 40000 -m statistic --mode random --probability 0\.0099\d* -j DROP/);
      expect(rules).toMatch(/-p udp -m udp --dport 40000 -m statistic --mode random --probability 0\.0099\d* -j DROP/);
      expect(rules).toMatch(/-p tcp -m tcp --sport 40000 -m statistic --mode random --probability 0\.0099\d* -j DROP/);
      expect(ns.method).toMatch(/iptables statistic/);
    } finally {
      ns.close();
    }
    expect(execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })).not.toContain(ns.name);
    expect(leftoverNetns(process.pid)).toEqual([]);
  });
});
