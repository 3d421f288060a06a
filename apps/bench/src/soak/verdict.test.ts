import { describe, expect, it } from 'vitest';
import { judgeSoak } from './verdict.js';
import type { SoakSample } from './verdict.js';

const limits = { poolSize: 12, sessions: 16 };

/** `n` samples 5 s apart; `at(i)` overrides fields of sample i. */
function run(n: number, at: (i: number) => Partial<SoakSample> = () => ({})): SoakSample[] {
  return Array.from({ length: n }, (_, i) => ({
    t: i * 5, rssMb: 100, heapUsedMb: 20, streams: 8, backends: 12, clients: 16,
    queries: i * 500, errors: i, unexpectedErrors: 0, mismatches: 0, ...at(i),
  }));
}

describe('judgeSoak', () => {
  it('passes a steady run', () => {
    const v = judgeSoak(run(30, (i) => ({ rssMb: 100 + (i % 3), heapUsedMb: 18 + (i % 4) })), limits);
    expect(v.failures).toEqual([]);
    expect(v.ok).toBe(true);
    expect(v.first?.queriesPerSecond).toBe(100);
  });

  it('fails RSS that keeps growing', () => {
    const v = judgeSoak(run(30, (i) => ({ rssMb: 100 + i * 5 })), limits);
    expect(v.ok).toBe(false);
    expect(v.failures.join()).toMatch(/RSS grew/);
  });

  it('fails a heap floor that keeps rising, but not a sawtooth', () => {
    expect(judgeSoak(run(30, (i) => ({ heapUsedMb: 20 + i * 3 })), limits).failures.join()).toMatch(/heap floor grew/);
    expect(judgeSoak(run(30, (i) => ({ heapUsedMb: i % 2 === 0 ? 20 : 120 })), limits).ok).toBe(true);
  });

  it('fails leaked backends, sessions and streams', () => {
    const f = judgeSoak(run(30, (i) => ({ backends: i > 20 ? 13 : 12, clients: i > 20 ? 40 : 16, streams: i > 20 ? 40 : 8 })), limits).failures.join();
    expect(f).toMatch(/exceeded the pool size/);
    expect(f).toMatch(/client sessions exceed/);
    expect(f).toMatch(/QUIC streams exceed/);
  });

  it('fails growing error rates, falling throughput, wrong answers and unexpected errors', () => {
    expect(judgeSoak(run(30, (i) => ({ errors: i * i })), limits).failures.join()).toMatch(/error rate grew/);
    expect(judgeSoak(run(30, (i) => ({ queries: i < 20 ? i * 500 : 10_000 + i })), limits).failures.join()).toMatch(/throughput fell/);
    expect(judgeSoak(run(30, (i) => ({ mismatches: i > 25 ? 1 : 0 })), limits).failures.join()).toMatch(/did not match/);
    expect(judgeSoak(run(30, (i) => ({ unexpectedErrors: i })), limits).failures.join()).toMatch(/outside fault windows/);
  });

  it('refuses to judge too few samples', () => {
    expect(judgeSoak(run(3), limits).ok).toBe(false);
  });
});
