// Printing a soak: one line per minute while it runs, a summary table and (--json) a JSON line at the end.
import type { PathFacts } from '../scenarios/types.js';
import type { FaultInjector } from './faults.js';
import type { SoakCounters } from './workload.js';
import type { SoakSample, SoakVerdict } from './verdict.js';

const mb = (x: number): string => `${x.toFixed(1)} MB`;

export function minuteLine(s: SoakSample, faults: number, qps: number): string {
  return [
    `t=${String(Math.round(s.t)).padStart(5)}s`,
    `rss ${mb(s.rssMb).padStart(9)}`,
    `heap ${mb(s.heapUsedMb).padStart(9)}`,
    `streams ${String(s.streams).padStart(3)}`,
    `backends ${String(s.backends).padStart(3)}`,
    `clients ${String(s.clients).padStart(3)}`,
    `queries ${s.queries} (${qps.toFixed(0)}/s)`,
    `errors ${s.errors} (unexpected ${s.unexpectedErrors})`,
    `mismatches ${s.mismatches}`,
    `faults ${faults}`,
  ].join('  ');
}

/** The figures of a finished soak: its summary table and its JSON line. */
export function soakSummary(
  minutes: number, samples: readonly SoakSample[], counters: SoakCounters, faults: FaultInjector, verdict: SoakVerdict, wan: PathFacts,
) {
  const first = samples[0];
  const last = samples[samples.length - 1];
  const mb1 = (x: number | undefined): number => Number((x ?? 0).toFixed(1));
  const peak = (get: (s: SoakSample) => number): number => Math.max(0, ...samples.map(get));
  return {
    minutes,
    samples: samples.length,
    rssStartMb: mb1(first?.rssMb),
    rssEndMb: mb1(last?.rssMb),
    rssMaxMb: mb1(peak((s) => s.rssMb)),
    heapStartMb: mb1(first?.heapUsedMb),
    heapEndMb: mb1(last?.heapUsedMb),
    queries: counters.queries,
    byKind: counters.byKind,
    errors: counters.errors,
    unexpectedErrors: counters.unexpectedErrors,
    mismatches: counters.mismatches,
    faults: faults.injected,
    faultsMissed: faults.missed,
    backendsMax: peak((s) => s.backends),
    streamsMax: peak((s) => s.streams),
    clientsMax: peak((s) => s.clients),
    wanPath: wan.mode,
    wanMeasuredRttMs: wan.rttMs,
    udpLost: wan.randomDrops === null ? 0 : wan.randomDrops[0] + wan.randomDrops[1],
    verdict,
    lastUnexpectedErrors: counters.lastUnexpected,
  };
}

export function summaryTable(s: ReturnType<typeof soakSummary>): string {
  const rows: [string, string][] = [
    ['duration', `${s.minutes} min, ${s.samples} samples`],
    ['RSS start -> end (max)', `${mb(s.rssStartMb)} -> ${mb(s.rssEndMb)} (${mb(s.rssMaxMb)})`],
    ['heap start -> end', `${mb(s.heapStartMb)} -> ${mb(s.heapEndMb)}`],
    ['queries', `${s.queries} (simple ${s.byKind.simple}, extended ${s.byKind.extended}, prepared ${s.byKind.prepared}, transactions ${s.byKind.transaction})`],
    ['errors', `${s.errors} (unexpected ${s.unexpectedErrors}), mismatches ${s.mismatches}`],
    ['faults', `${Object.entries(s.faults).map(([k, v]) => `${k} ${v}`).join(', ')}; missed ${s.faultsMissed}`],
    ['max backends / streams / clients', `${s.backendsMax} / ${s.streamsMax} / ${s.clientsMax}`],
    ['WAN measured RTT (path)', s.wanMeasuredRttMs === null ? 'n/a' : `${s.wanMeasuredRttMs.toFixed(2)} ms; UDP datagrams lost ${s.udpLost}`],
  ];
  if (s.verdict.first !== null && s.verdict.last !== null) {
    const f = s.verdict.first;
    const l = s.verdict.last;
    rows.push(['first third -> last third', `RSS mean ${mb(f.rssMbMean)} -> ${mb(l.rssMbMean)}, heap floor ${mb(f.heapUsedMbMin)} -> ${mb(l.heapUsedMbMin)}, `
      + `${f.queriesPerSecond.toFixed(0)} -> ${l.queriesPerSecond.toFixed(0)} q/s, ${f.errorsPerMinute.toFixed(1)} -> ${l.errorsPerMinute.toFixed(1)} errors/min`]);
  }
  rows.push(['verdict', s.verdict.ok ? 'PASS: nothing grew without bound' : `FAIL: ${s.verdict.failures.join('; ')}`]);
  const w = Math.max(...rows.map(([k]) => k.length));
  return rows.map(([k, v]) => `${k.padEnd(w)}  ${v}`).join('\n');
}
