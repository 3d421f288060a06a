// The figures of `quicpool-bench transport`: the median of each run label over the rounds, QUIC
// against TCP per round trip, the printed table and the JSON line's object.
import type { UdpIoKind } from '@quicpool/transport';
import type { FirstResponseResult } from './first-response.js';
import type { PingPongResult as Row } from './pingpong-harness.js';
import type { Floor } from './quic-floor.js';
import { median } from '../report/median.js';
import { round1, round2 } from '../report/round.js';

export interface Ratio {
  quic: string;
  tcp: string;
  /** QUIC over TCP, CPU per round trip: client side, server side, both sides together. */
  client: number;
  server: number;
  ratio: number;
}

/**
 * Each QUIC scenario (over `io`) against the TCP run with as many concurrent sessions, 50x40 also
 * against 40 sockets (the targets compare with TCP-40), and 1x1 against one socket.
 */
export function quicVsTcp(rows: Row[], io: UdpIoKind): Ratio[] {
  const row = (label: string): Row | undefined => rows.find((x) => x.label === label);
  const out: Ratio[] = [];
  for (const [quic, tcp] of [['1x1', '1'], ['1x40', '40'], ['50x40', '2000'], ['50x40', '40']] as const) {
    const q = row(`quic ${quic} ${io}`);
    const t = row(`tcp ${tcp}`);
    if (q === undefined || t === undefined || t.usPerRtClient <= 0 || t.usPerRtServer <= 0) continue;
    out.push({
      quic,
      tcp,
      client: q.usPerRtClient / t.usPerRtClient,
      server: q.usPerRtServer / t.usPerRtServer,
      ratio: (q.usPerRtClient + q.usPerRtServer) / (t.usPerRtClient + t.usPerRtServer),
    });
  }
  return out;
}

/** One row per label: each figure the median of that label's runs. */
export function medianRows(runs: Row[]): Row[] {
  const labels = [...new Set(runs.map((r) => r.label))];
  return labels.map((label) => {
    const of = runs.filter((r) => r.label === label);
    const med = (get: (r: Row) => number): number => median(of.map(get)) ?? Number.NaN;
    const medOrNull = (get: (r: Row) => number | null): number | null => (of.every((r) => get(r) !== null) ? med((r) => get(r) ?? 0) : null);
    return {
      label,
      roundTripsPerSec: Math.round(med((r) => r.roundTripsPerSec)),
      usPerRtClient: round1(med((r) => r.usPerRtClient)),
      usPerRtServer: round1(med((r) => r.usPerRtServer)),
      p50Us: Math.round(med((r) => r.p50Us)),
      p99Us: Math.round(med((r) => r.p99Us)),
      rssClientMB: Math.round(med((r) => r.rssClientMB)),
      rssServerMB: Math.round(med((r) => r.rssServerMB)),
      datagramsPerRt: medOrNull((r) => r.datagramsPerRt),
      sendsPerRt: medOrNull((r) => r.sendsPerRt),
      recvsPerRt: medOrNull((r) => r.recvsPerRt),
    };
  });
}

export function printTable(rows: Row[], durationMs: number, rounds: number): void {
  console.log(
    `Transport ping-pong, 200-byte request/response, client and server in separate processes, ${durationMs} ms window` +
      (rounds > 1 ? `, median of ${rounds} interleaved rounds` : ''),
  );
  const header = ['run', 'rt/s', 'client µs/rt', 'server µs/rt', 'p50 µs', 'p99 µs', 'dgrams/rt', 'sends/rt', 'recvs/rt', 'client RSS MB', 'server RSS MB'];
  const lines = rows.map((r) => [
    r.label,
    String(r.roundTripsPerSec),
    r.usPerRtClient.toFixed(1),
    r.usPerRtServer.toFixed(1),
    String(r.p50Us),
    String(r.p99Us),
    r.datagramsPerRt === null ? '-' : r.datagramsPerRt.toFixed(2),
    r.sendsPerRt === null ? '-' : r.sendsPerRt.toFixed(3),
    r.recvsPerRt === null ? '-' : r.recvsPerRt.toFixed(3),
    String(r.rssClientMB),
    String(r.rssServerMB),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((line) => (line[i] ?? '').length)));
  const format = (cells: string[]): string => cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0))).join('  ');
  console.log(format(header));
  for (const line of lines) console.log(format(line));
  console.log('(dgrams, sends, recvs: datagrams and send/receive system calls of both sides per round trip)');
}

export function summary(
  rows: Row[],
  quicIo: UdpIoKind,
  first: FirstResponseResult | null,
  floor: Floor | null,
  ratios: Ratio[],
  failures: Array<{ label: string; error: string }>,
): object {
  /** Rows `<prefix> <key>[ <suffix>]` keyed by <key> ('1x40', '40' ...). */
  const group = (prefix: string, suffix = ''): Record<string, Record<string, number>> => {
    const out: Record<string, Record<string, number>> = {};
    for (const r of rows) {
      if (!r.label.startsWith(`${prefix} `) || !r.label.endsWith(suffix)) continue;
      out[r.label.slice(prefix.length + 1, r.label.length - suffix.length)] = {
        roundTripsPerSec: r.roundTripsPerSec,
        usPerRtClient: r.usPerRtClient,
        usPerRtServer: r.usPerRtServer,
        p50Us: r.p50Us,
        p99Us: r.p99Us,
        ...(r.datagramsPerRt !== null ? { datagramsPerRt: r.datagramsPerRt } : {}),
        ...(r.sendsPerRt !== null ? { sendCallsPerRt: r.sendsPerRt } : {}),
        ...(r.recvsPerRt !== null ? { recvCallsPerRt: r.recvsPerRt } : {}),
      };
    }
    return out;
  };
  return {
    quic: group('quic', ` ${quicIo}`),
    quicIo,
    quicDgram: group('quic', ' dgram'),
    tcp: group('tcp'),
    matrixaiHighLevel: group('matrixai'),
    firstResponseRtts: first === null ? null : { full: first.full, zeroRtt: first.zeroRtt, measuredRttMs: first.measuredRttMs },
    quicVsTcpCpu: Object.fromEntries(
      ratios.map((r) => [`quic ${r.quic} / tcp ${r.tcp}`, { client: round2(r.client), server: round2(r.server), both: round2(r.ratio) }]),
    ),
    floor,
    notAvailable: failures,
  };
}
