// The report, as self-contained HTML (inline SVG, no scripts, no network). First what a reader came for: the question, one
// answer per scenario, the seed's six panels for `original`; then a section per scenario, sanity checks last (each a PNG).
import { WORKLOAD_SQL } from '../load/variant.js';
import type { SetupFacts } from '../scenarios/run-bench.js';
import type { ScenarioResult, VariantRun } from '../scenarios/types.js';
import type { TelemetryRow } from '../telemetry/csv.js';
import { variantFigures } from './figures.js';
import type { MachineDescription } from './machine.js';
import { machineLine } from './machine.js';
import type { Series } from './svg-chart.js';
import { PALETTE, escapeXml, lineChart } from './svg-chart.js';

export type ReportData = Readonly<{ createdAt: string; command: string; machine: MachineDescription; setup: SetupFacts; results: readonly ScenarioResult[] }>;

type Ran = Extract<ScenarioResult, { kind: 'ran' }>;

type Panel = Readonly<{ id: string; title: string; yLabel: string; pick: (row: TelemetryRow) => number | null }>;

const MB = 2 ** 20;
const div = (v: number | null, by: number): number | null => (v === null ? null : v / by);

/** The original article's six panels, in its order. */
export const SIX_PANELS: readonly Panel[] = [
  { id: 'active', title: 'Active queries (issued, unanswered)', yLabel: 'queries', pick: (r) => r.active_number_of_queries },
  { id: 'failed', title: 'Failed queries per second', yLabel: 'queries/s', pick: (r) => r.failed_number_of_queries },
  { id: 'processed', title: 'Processed queries per second', yLabel: 'queries/s', pick: (r) => r.number_of_queries_processed },
  { id: 'latency', title: 'Mean query latency', yLabel: 'ms', pick: (r) => div(r.average_query_time_us, 1000) },
  { id: 'cpu', title: 'Client CPU', yLabel: 'CPU ms per s', pick: (r) => r.cpu_milliseconds },
  { id: 'memory', title: 'Client memory (RSS)', yLabel: 'MB', pick: (r) => div(r.memory_bytes, MB) },
];

/** The second row of each section: tail latency and where the CPU went. */
const MORE_PANELS: readonly Panel[] = [
  { id: 'p99', title: 'Latency p99 per second', yLabel: 'ms', pick: (r) => div(r.p99_us, 1000) },
  { id: 'pooler-cpu', title: 'Pooler CPU per query', yLabel: 'µs', pick: (r) => r.pooler_cpu_us_per_query },
  { id: 'forwarder-cpu', title: 'Forwarder CPU per query', yLabel: 'µs', pick: (r) => r.forwarder_cpu_us_per_query },
];

/** The page's width in px, and its screenshots'. */
export const WIDTH = 1480;
const CHART = { width: 470, height: 240 };

const f = (v: number | null | undefined, digits = 2): string => (v === null || v === undefined ? '—' : String(+v.toFixed(digits)));
const color = (i: number): string => PALETTE[i % PALETTE.length] ?? '#000';

function panelChart(id: string, panel: Panel, runs: readonly VariantRun[]): string {
  const series: Series[] = runs.map((run, i) => ({ name: run.variant, color: color(i), points: run.rows.map((row, x) => [x + 1, panel.pick(row)] as const) }));
  // The offered rate next to what was processed shows overload at a glance.
  if (panel.id === 'processed') runs.forEach((run, i) => series.push({ name: `${run.variant} offered`, color: color(i), dashed: true, points: run.rows.map((row, x) => [x + 1, row.offered_per_sec] as const) }));
  return lineChart({ id: `${id}:${panel.id}`, title: panel.title, xLabel: 'seconds', yLabel: panel.yLabel, series, ...CHART });
}

const grid = (id: string, panels: readonly Panel[], runs: readonly VariantRun[]): string => `<div class="grid">${panels.map((p) => panelChart(id, p, runs)).join('\n')}</div>`;

const shownRuns = (r: Ran): readonly VariantRun[] => r.rounds[r.shownRound] ?? [];

function figuresTable(r: Ran): string {
  const keys = [...r.keyFigures, ...Object.keys(r.figures).filter((k) => !r.keyFigures.includes(k))].slice(0, 14);
  const rounds = r.rounds.length;
  const head = `<tr><th>figure</th><th>median (min–max) of ${rounds} round${rounds === 1 ? '' : 's'}</th>${rounds > 1 ? Array.from({ length: rounds }, (_, i) => `<th>round ${i + 1}</th>`).join('') : ''}</tr>`;
  const body = keys.map((k) => {
    const s = r.figures[k];
    if (s === undefined) return '';
    const mark = r.unstable.includes(k) ? ' class="unstable"' : r.keyFigures.includes(k) ? ' class="key"' : '';
    const spread = s.values.length > 1 ? ` <span class="range">(${f(s.min)}–${f(s.max)})</span>` : '';
    const perRound = rounds > 1 ? s.values.map((v) => `<td>${f(v, 3)}</td>`).join('') : '';
    return `<tr${mark}><td>${escapeXml(k)}</td><td><b>${f(s.median, 3)}</b>${spread}</td>${perRound}</tr>`;
  });
  return `<table class="figures">${head}${body.join('')}</table>`;
}

function cpuTable(runs: readonly VariantRun[]): string {
  const head = '<tr><th>variant</th><th>step</th><th>q/s</th><th>client µs/q</th><th>forwarder µs/q</th><th>pooler µs/q</th><th>postgres µs/q</th><th>pooler ms/s</th><th>machine busy ms/s</th></tr>';
  const body = runs.flatMap((run) =>
    variantFigures(run).steps.map((s) => `<tr><td>${escapeXml(run.variant)}</td><td>${escapeXml(s.label)}</td><td>${f(s.qps, 0)}</td><td>${f(s.usPerQuery.client, 0)}</td><td>${f(s.usPerQuery.forwarder, 0)}</td><td>${f(s.usPerQuery.pooler, 0)}</td><td>${f(s.usPerQuery.postgres, 0)}</td><td>${f(s.msPerSec.pooler, 0)}</td><td>${f(s.machineMsPerSec, 0)}</td></tr>`),
  );
  return `<table class="cpu">${head}${body.join('')}</table>`;
}

function runsTable(runs: readonly VariantRun[]): string {
  const head = '<tr><th>variant</th><th>sessions</th><th>offered</th><th>processed</th><th>failed</th><th>mean ms</th><th>p50 ms</th><th>p99 ms</th><th>max ms</th><th>peak backlog</th><th>client RSS MB</th><th>client fds</th><th>pooler fds</th><th>RTT ms</th><th>open ms</th></tr>';
  const body = runs.map((run) => {
    const v = variantFigures(run);
    return `<tr><td>${escapeXml(run.variant)}</td><td>${v.sessions}</td><td>${v.offered}</td><td>${v.processed}</td><td>${v.failed}</td><td>${f(run.result.latency.meanUs / 1000)}</td><td>${f(v.p50Ms)}</td><td>${f(v.p99Ms)}</td><td>${f(v.maxMs)}</td><td>${v.peakActive}</td><td>${v.peakRssMB}</td><td>${f(v.fds, 0)}</td><td>${f(v.poolerFds, 0)}</td><td>${f(v.rttMs)}</td><td>${v.openMs}</td></tr>`;
  });
  return `<table class="runs">${head}${body.join('')}</table>`;
}

const list = (items: readonly string[]): string => (items.length === 0 ? '' : `<ul class="notes">${items.map((n) => `<li>${escapeXml(n)}</li>`).join('')}</ul>`);

function section(r: ScenarioResult): string {
  if (r.kind === 'unavailable') return `<section data-scenario="${r.name}" class="unavailable"><h2>${escapeXml(r.name)}: ${escapeXml(r.title)}</h2><p>Skipped: needs ${escapeXml(r.needs)}.</p></section>`;
  if (r.kind === 'failed') return `<section data-scenario="${r.name}" class="unavailable"><h2>${escapeXml(r.name)}: ${escapeXml(r.title)}</h2><p class="unstable">Failed: ${escapeXml(r.error)}</p></section>`;
  const runs = shownRuns(r);
  const errors = runs.flatMap((run) => run.result.errors.map((e) => `${run.variant} error: ${e}`));
  return [
    `<section data-scenario="${r.plan.name}"><h2>${escapeXml(r.plan.name)}: ${escapeXml(r.plan.title)}</h2>`,
    `<p class="answer">${escapeXml(r.answer)}${r.unstable.length > 0 ? ' <span class="unstable">(unstable across rounds)</span>' : ''}</p>`,
    `<p>${escapeXml(r.plan.description)} Variants: ${escapeXml(r.plan.variants.map((v) => `${v.name} = ${v.label}`).join('; '))}. Charts: round ${r.shownRound + 1} of ${r.rounds.length}.</p>`,
    grid(r.plan.name, SIX_PANELS, runs),
    grid(r.plan.name, MORE_PANELS, runs),
    '<div class="tables">',
    `<div><h3>Figures over the rounds</h3>${figuresTable(r)}</div>`,
    `<div><h3>Where the CPU goes (per step of the load)</h3>${cpuTable(runs)}</div>`,
    '</div>',
    runsTable(runs),
    list([...r.notes, ...errors.slice(0, 6)]),
    '</section>',
  ].join('\n');
}

/** Sections in reading order: the comparisons as they ran, then the sanity checks, then what was skipped. */
export function inReadingOrder(results: readonly ScenarioResult[]): ScenarioResult[] {
  const rank = (r: ScenarioResult): number => (r.kind !== 'ran' ? 2 : r.plan.sanity ? 1 : 0);
  return [...results].sort((a, b) => rank(a) - rank(b));
}

function headline(d: ReportData): string {
  const ran = d.results.filter((r): r is Ran => r.kind === 'ran');
  const main = ran.find((r) => r.plan.name === 'original') ?? ran.find((r) => !r.plan.sanity) ?? ran[0];
  const rtt = d.setup.rttConfiguredMs;
  const answers = inReadingOrder(d.results).map((r) =>
    r.kind === 'ran'
      ? `<li><b>${escapeXml(r.plan.name)}</b>: ${escapeXml(r.answer)}${r.unstable.length > 0 ? ' <span class="unstable">(rounds differ by more than 15%)</span>' : ''}</li>`
      : `<li><b>${escapeXml(r.name)}</b>: ${r.kind === 'failed' ? `<span class="unstable">failed (${escapeXml(r.error)})</span>` : `skipped (needs ${escapeXml(r.needs)})`}.</li>`,
  );
  const path =
    d.setup.wanPath === 'packet'
      ? `WAN: the packet-level path (the client in its own network namespace, quicpool and Postgres on the host, a forwarder moving IP packets between them after ${rtt / 2} ms each way).`
      : `WAN: the user-space relay, NOT the packet-level path (${d.setup.fallback ?? 'not available'}): it terminates TCP, so TCP's own loss recovery never sees the delay, and loss cannot run.`;
  return [
    '<header class="headline">',
    `<h1>Does multiplexing beat TCP pooling for a client ${rtt} ms away?</h1>`,
    `<p class="${d.setup.wanPath === 'packet' ? 'setup' : 'setup fallback'}">${escapeXml(path)} Congestion control: TCP ${escapeXml(d.setup.congestion.tcp)}; QUIC ${escapeXml(d.setup.congestion.quic)}. Pacing: ${escapeXml(d.setup.congestion.pacing)}</p>`,
    `<p class="setup">${escapeXml(d.setup.scale)} ${d.setup.rounds} round${d.setup.rounds === 1 ? '' : 's'} per scenario, variants interleaved; each figure is the median (min–max over the rounds). Machine: ${escapeXml(machineLine(d.machine))}.</p>`,
    `<ul class="answers">${answers.join('')}</ul>`,
    main === undefined ? '' : `<h3>${escapeXml(main.plan.title)}: the original benchmark's six panels (round ${main.shownRound + 1} of ${main.rounds.length})</h3>${grid(`headline-${main.plan.name}`, SIX_PANELS, shownRuns(main))}`,
    '</header>',
  ].join('\n');
}

const CSS = `body{font-family:sans-serif;margin:20px;color:#222;width:${WIDTH - 40}px}
h1{font-size:26px;margin:0 0 8px}h2{margin:8px 0}h3{margin:10px 0 4px;font-size:15px}p{margin:4px 0}
.grid{display:grid;grid-template-columns:repeat(3,${CHART.width}px);gap:8px;margin:6px 0}
.answers li,.answer{font-size:15px;margin:3px 0}.answer{font-weight:bold}.setup{font-size:13px;color:#444}.fallback{color:#b00;font-weight:bold}
.tables{display:grid;grid-template-columns:560px 860px;gap:16px}
table{border-collapse:collapse;margin:4px 0;font-size:12px}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}th{background:#f3f3f3}
td:first-child{text-align:left}.range{color:#777}.key td{background:#f7fbff}.unstable,.unstable td{color:#b00}
.notes{font-size:12px;color:#444;margin:4px 0}section{margin:18px 0;border-top:2px solid #ddd;padding-top:4px}.unavailable{color:#777}`;

export function renderReport(d: ReportData): string {
  const body = [headline(d), ...inReadingOrder(d.results).map(section)].join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>quicpool benchmark ${escapeXml(d.createdAt)}</title><style>${CSS}</style></head>
<body>
${body}
<p class="setup">${escapeXml(d.createdAt)} · <code>${escapeXml(d.command)}</code> · workload <code>${escapeXml(WORKLOAD_SQL)}</code>, open loop, one row per second per variant.</p>
</body></html>
`;
}
