import { describe, expect, it } from 'vitest';
import type { PingPongResult } from './pingpong-harness.js';
import { pingPongLabel } from './pingpong-harness.js';
import { medianRows, quicVsTcp, summary } from './summary.js';

function row(label: string, us: number, udp: boolean): PingPongResult {
  return {
    label,
    roundTripsPerSec: 1000 * us,
    usPerRtClient: us,
    usPerRtServer: us,
    p50Us: 10 * us,
    p99Us: 20 * us,
    rssClientMB: 80,
    rssServerMB: 70,
    datagramsPerRt: udp ? 2 : null,
    sendsPerRt: udp ? 0.1 : null,
    recvsPerRt: udp ? 0.2 : null,
  };
}

describe('transport summary', () => {
  it('labels the runs as the table and the JSON keys expect', () => {
    expect(pingPongLabel({ transport: 'tcp', connections: 40, streamsPerConnection: 1 })).toBe('tcp 40');
    expect(pingPongLabel({ transport: 'quic', connections: 1, streamsPerConnection: 40, udpIo: 'native' })).toBe('quic 1x40 native');
    expect(pingPongLabel({ transport: 'matrixai', connections: 1, streamsPerConnection: 40 })).toBe('matrixai 1x40');
  });

  it('takes the median of each label over the rounds, keeping null where a run does not count a figure', () => {
    const rows = medianRows([row('tcp 1', 4, false), row('quic 1x1 native', 10, true), row('tcp 1', 2, false), row('tcp 1', 3, false)]);
    expect(rows.map((r) => r.label)).toEqual(['tcp 1', 'quic 1x1 native']);
    expect(rows[0]).toEqual({ ...row('tcp 1', 3, false) });
    expect(rows[1]?.datagramsPerRt).toBe(2);
  });

  it('writes the JSON groups with the keys of each transport', () => {
    const rows = [row('tcp 1', 2, false), row('quic 1x1 native', 4, true), row('quic 1x1 dgram', 6, true), row('matrixai 1x40', 800, false)];
    const ratios = quicVsTcp(rows, 'native');
    expect(ratios).toEqual([{ quic: '1x1', tcp: '1', client: 2, server: 2, ratio: 2 }]);
    const json = summary(rows, 'native', null, null, ratios, [{ label: 'x', error: 'y' }]);
    const figures = { roundTripsPerSec: 4000, usPerRtClient: 4, usPerRtServer: 4, p50Us: 40, p99Us: 80 };
    expect(json).toEqual({
      quic: { '1x1': { ...figures, datagramsPerRt: 2, sendCallsPerRt: 0.1, recvCallsPerRt: 0.2 } },
      quicIo: 'native',
      quicDgram: {
        '1x1': { roundTripsPerSec: 6000, usPerRtClient: 6, usPerRtServer: 6, p50Us: 60, p99Us: 120, datagramsPerRt: 2, sendCallsPerRt: 0.1, recvCallsPerRt: 0.2 },
      },
      tcp: { 1: { roundTripsPerSec: 2000, usPerRtClient: 2, usPerRtServer: 2, p50Us: 20, p99Us: 40 } },
      matrixaiHighLevel: { '1x40': { roundTripsPerSec: 800000, usPerRtClient: 800, usPerRtServer: 800, p50Us: 8000, p99Us: 16000 } },
      firstResponseRtts: null,
      quicVsTcpCpu: { 'quic 1x1 / tcp 1': { client: 2, server: 2, both: 2 } },
      floor: null,
      notAvailable: [{ label: 'x', error: 'y' }],
    });
    expect(Object.keys((json as { quic: Record<string, object> }).quic['1x1'] ?? {})).toEqual([
      'roundTripsPerSec', 'usPerRtClient', 'usPerRtServer', 'p50Us', 'p99Us', 'datagramsPerRt', 'sendCallsPerRt', 'recvCallsPerRt',
    ]);
  });
});
