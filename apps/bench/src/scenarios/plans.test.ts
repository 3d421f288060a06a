import { describe, expect, it } from 'vitest';
import type { BenchSettings } from './plans.js';
import { planFor, scaleFromCapacity, seedScale, sessionShape } from './plans.js';
import { roundStat, unstable } from './run-scenario.js';

const settings: BenchSettings = { quick: false, originalExact: false, seedScale: false, delayMs: 15, rampSeconds: 15, probeSeconds: 2, lossRate: 0.01, steadyRate: null, pgbouncer: false };

describe('load scaled to the machine', () => {
  it('peaks at 70% of the lower capacity and puts TCP\'s wall at half of it', () => {
    const scale = scaleFromCapacity(3_000, 4_000);
    expect(scale.peak).toBe(2_100);
    const shape = sessionShape(settings, scale);
    // 1,050 q/s x 30 ms = 31.5 sessions: TCP's wall sessions / RTT is half the peak.
    expect(shape.tcp).toBe(32);
    // QUIC streams : TCP sessions = 4 : 1, connections : streams as 50 : 40.
    expect(shape.connections * shape.streams / shape.tcp).toBeCloseTo(4, 0);
    expect(shape.connections).toBeGreaterThan(shape.streams);
    // Two round trips per query (--original-exact): twice the sessions for the same wall.
    expect(sessionShape({ ...settings, originalExact: true }, scale).tcp).toBe(63);
  });

  it('keeps the seed\'s own numbers with --seed-scale', () => {
    expect(sessionShape({ ...settings, seedScale: true }, seedScale)).toEqual({ tcp: 500, connections: 50, streams: 40 });
    const original = planFor('original', { ...settings, seedScale: true }, seedScale);
    expect(original.load).toMatchObject({ kind: 'open', ramp: { startRate: 100, endRate: 5_000, durationMs: 30_000 } });
    const exact = planFor('original', { ...settings, seedScale: true, originalExact: true }, seedScale);
    expect(exact.load).toMatchObject({ ramp: { startRate: 0, endRate: 10_000 }, tickMs: 500 });
    expect(exact.roundTripsPerQuery).toBe(2);
  });

  it('runs the original TCP clients through PgBouncer too with --pgbouncer, and nothing else changes', () => {
    const scale = scaleFromCapacity(3_000, 4_000);
    const plain = planFor('original', settings, scale);
    const withPgbouncer = planFor('original', { ...settings, pgbouncer: true }, scale);
    expect(plain.variants.map((v) => v.route)).toEqual(['pooler', 'pooler']);
    expect(withPgbouncer.variants.slice(0, 2)).toEqual(plain.variants);
    expect(withPgbouncer.variants[2]).toMatchObject({ name: 'pgbouncer', route: 'pgbouncer', client: plain.variants[0]?.client });
    for (const name of ['sockets', 'fair', 'loss'] as const) expect(planFor(name, { ...settings, pgbouncer: true }, scale).variants).toEqual(planFor(name, settings, scale).variants);
  });

  it('gives sockets equal socket counts and fair/loss equal sessions with headroom', () => {
    const scale = scaleFromCapacity(3_000, 4_000);
    const clients = (name: 'sockets' | 'fair' | 'loss') => planFor(name, settings, scale).variants.map((v) => v.client);
    const [tcp, quic] = clients('sockets');
    expect(tcp?.kind === 'pg' && quic?.kind === 'quic' && tcp.sessions === quic.connections).toBe(true);
    // The seed's sockets scenario: TCP 50 vs QUIC 50 x 40.
    expect(planFor('sockets', { ...settings, seedScale: true }, seedScale).variants.map((v) => v.label)).toEqual(['TCP + TLS, 50 sessions', 'QUIC, 50 connections x 40 streams']);
    const [ftcp, fquic] = clients('fair');
    expect(ftcp?.kind === 'pg' && fquic?.kind === 'quic' && ftcp.sessions === fquic.connections * fquic.streams).toBe(true);
    expect(planFor('loss', settings, scale).wan?.lossRate).toBe(0.01);
    expect(planFor('fair', settings, scale).wan?.lossRate).toBe(0);
  });
});

describe('figures over rounds', () => {
  it('takes the median with min and max, and flags a spread over 15%', () => {
    expect(roundStat([3, 1, 2])).toMatchObject({ median: 2, min: 1, max: 3 });
    expect(roundStat([1, null, 3])).toMatchObject({ median: 2, min: 1, max: 3 });
    expect(roundStat([null])).toMatchObject({ median: null, min: null, max: null });
    expect(unstable(roundStat([1.0, 1.05, 1.1]))).toBe(false);
    expect(unstable(roundStat([1.0, 1.1, 1.2]))).toBe(true);
  });
});
