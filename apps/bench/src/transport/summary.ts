// The figures of `quicpool-bench transport`: each run's medians over the rounds, QUIC against TCP, the table and the JSON.
import type { UdpIoKind } from '@quicpool/transport';
import type { FirstResponseResult } from './first-response.js';
import type { PingPongResult as Row } from './pingpong-harness.js';
import type { Floor } from './quic-floor.js';
import { median } from '../report/median.js';
import { round1, round2 } from '../report/round.js';

// QUIC over TCP, CPU per round trip (client, server, both: `ratio`): each QUIC scenario (over `io`) against TCP with as
// many sessions, 50x40 also against 40 sockets (the targets compare with TCP-40), and 1x1 against one socket.
export function quicVsTcp(rows: Row[], io: UdpIoKind) {
  const row = (label: string): Row | undefined => rows.find((x) => x.label === label);
  const pairs = [['1x1', '1'], ['1x40', '40'], ['50x40', '2000'], ['50x40', '40']] as const;
  return pairs.flatMap(([quic, tcp]) => {
    const q = row(`quic ${quic} ${io}`);
    const t = row(`tcp ${tcp}`);
    if (q === undefined || t === undefined || t.usPerRtClient <= 0 || t.usPerRtServer <= 0) return [];
    const both = (q.usPerRtClient + q.usPerRtServer) / (t.usPerRtClient + t.usPerRtServer);
    return [{ quic, tcp, client: q.usPerRtClient / t.usPerRtClient, server: q.usPerRtServer / t.usPerRtServer, ratio: both }];
  });
}

// A row's figures in table order: header, decimals, JSON key (none: table only), rounding of the median (none: as is).
const COLUMNS: readonly { key: Exclude<keyof Row, 'label'>; header: string; digits: number; json?: string; round?: (x: number) => number }[] = [
  { key: 'roundTripsPerSec', header: 'rt/s', digits: 0, json: 'roundTripsPerSec', round: Math.round },
  { key: 'usPerRtClient', header: 'client µs/rt', digits: 1, json: 'usPerRtClient', round: round1 },
  { key: 'usPerRtServer', header: 'server µs/rt', digits: 1, json: 'usPerRtServer', round: round1 },
  { key: 'p50Us', header: 'p50 µs', digits: 0, json: 'p50Us', round: Math.round },
  { key: 'p99Us', header: 'p99 µs', digits: 0, json: 'p99Us', round: Math.round },
  { key: 'datagramsPerRt', header: 'dgrams/rt', digits: 2, json: 'datagramsPerRt' },
  { key: 'sendsPerRt', header: 'sends/rt', digits: 3, json: 'sendCallsPerRt' },
  { key: 'recvsPerRt', header: 'recvs/rt', digits: 3, json: 'recvCallsPerRt' },
  { key: 'rssClientMB', header: 'client RSS MB', digits: 0, round: Math.round },
  { key: 'rssServerMB', header: 'server RSS MB', digits: 0, round: Math.round },
];

/** One row per label: each figure the median of that label's runs (null where a run does not count it). */
export function medianRows(runs: Row[]): Row[] {
  return [...new Set(runs.map((r) => r.label))].map((label) => {
    const of = runs.filter((r) => r.label === label);
    const figures = COLUMNS.map(({ key, round = (x: number): number => x }) => {
      const values = of.map((r) => r[key]);
      return [key, values.includes(null) ? null : round(median(values) ?? Number.NaN)] as const;
    });
    return { label, ...Object.fromEntries(figures) } as Row;
  });
}

export function printTable(rows: Row[], durationMs: number, rounds: number): void {
  const medianNote = rounds > 1 ? `, median of ${rounds} interleaved rounds` : '';
  console.log(`Transport ping-pong, 200-byte request/response, client and server in separate processes, ${durationMs} ms window${medianNote}`);
  const header = ['run', ...COLUMNS.map((c) => c.header)];
  const lines = rows.map((r) => [r.label, ...COLUMNS.map(({ key, digits }) => r[key]?.toFixed(digits) ?? '-')]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((line) => (line[i] ?? '').length)));
  const format = (cells: string[]): string => cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0))).join('  ');
  console.log(format(header));
  for (const line of lines) console.log(format(line));
  console.log('(dgrams, sends, recvs: datagrams and send/receive system calls of both sides per round trip)');
}

export function summary(
  rows: Row[], quicIo: UdpIoKind, first: FirstResponseResult | null, floor: Floor | null,
  ratios: ReturnType<typeof quicVsTcp>, failures: Array<{ label: string; error: string }>,
): object {
  /** Rows `<prefix> <key>[ <suffix>]` keyed by <key> ('1x40', '40' ...). */
  const group = (prefix: string, suffix = ''): Record<string, Record<string, number>> => {
    const out: Record<string, Record<string, number>> = {};
    for (const r of rows) {
      if (!r.label.startsWith(`${prefix} `) || !r.label.endsWith(suffix)) continue;
      const figures: Record<string, number> = {};
      for (const { key, json } of COLUMNS) if (json !== undefined && r[key] !== null) figures[json] = r[key];
      out[r.label.slice(prefix.length + 1, r.label.length - suffix.length)] = figures;
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
