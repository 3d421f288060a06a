import { describe, expect, it } from 'vitest';
import { PingPongSide } from './pingpong-worker.js';
import type { RoleFactory, UdpCounters } from './pingpong-worker.js';

/** A client role whose round trips and counters the test drives by hand. */
function fakeRoles(): { roles: Record<string, RoleFactory>; roundTrip: (ms: number) => void; counters: UdpCounters; closed: () => boolean } {
  let onRoundTrip: (ms: number) => void = () => {};
  let closed = false;
  const counters: UdpCounters = { datagramsOut: 0, sendCalls: null, recvCalls: null, io: null };
  const roles: Record<string, RoleFactory> = {
    client: async (_config, report) => {
      onRoundTrip = report;
      return { close: async () => void (closed = true), udpCounters: () => ({ ...counters }) };
    },
    server: async () => ({ port: 4321, close: async () => {} }),
  };
  return { roles, roundTrip: (ms) => onRoundTrip(ms), counters, closed: () => closed };
}

const config = { connections: 1, streamsPerConnection: 1, payloadBytes: 200 };

describe('PingPongSide', () => {
  it('counts only the window, reports latency percentiles in µs and the UDP counters over the window', async () => {
    const fake = fakeRoles();
    const side = new PingPongSide(fake.roles, 1000);
    expect(await side.init('client', config)).toBe(0);
    fake.roundTrip(99); // before the window: not counted
    fake.counters.datagramsOut = 10;
    await side.start();
    for (let ms = 1; ms <= 100; ms++) fake.roundTrip(ms / 1000);
    fake.counters.datagramsOut = 210;
    const report = await side.stop();
    fake.roundTrip(99); // after the window: not counted
    expect(report.roundTrips).toBe(100);
    expect(report.p50Us).toBe(51);
    expect(report.p99Us).toBe(100);
    expect(report.udp).toEqual({ datagramsOut: 200, sendCalls: null, recvCalls: null, io: null });
    expect(report.cpuUs).toBeGreaterThanOrEqual(0);
    await side.exit();
    expect(fake.closed()).toBe(true);
  });

  it('keeps at most maxSamples latencies but counts every round trip; a server says its port and has no UDP figures', async () => {
    const fake = fakeRoles();
    const client = new PingPongSide(fake.roles, 10);
    await client.init('client', config);
    await client.start();
    for (let i = 0; i < 50; i++) fake.roundTrip(i < 10 ? 0.001 : 1);
    const report = await client.stop();
    expect(report.roundTrips).toBe(50);
    expect(report.p99Us).toBe(1);
    const server = new PingPongSide(fake.roles, 10);
    expect(await server.init('server', config)).toBe(4321);
    await server.start();
    expect((await server.stop()).udp).toBeNull();
  });

  it('refuses a role it does not know', async () => {
    await expect(new PingPongSide({}, 1).init('nope', config)).rejects.toThrow('unknown role nope');
  });
});
