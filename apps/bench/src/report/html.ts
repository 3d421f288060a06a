// The self-contained HTML report: per scenario the original article's six panels with every
// variant on the same axes, latency percentiles, headline ratios, and the machine and measured RTT.
// No scripts, no external resources: it opens offline and renders identically in headless Chromium.
import type { TelemetryRow } from '../telemetry/csv.js';
import type { ScenarioResult, VariantRun } from '../scenarios/types.js';
import { headlineRatios, variantFigures } from './figures.js';
import type { MachineDescription } from './machine.js';
import { machineLine } from './machine.js';
import type { Series } from './svg-chart.js';
import { PALETTE, escapeXml, lineChart } from './svg-chart.js';

export interface ReportData {
  createdAt: string;
  machine: MachineDescription;
  results: readonly ScenarioResult[];
  command: string;
}

interface Panel {
  id: string;
  title: string;
  yLabel: string;
  pick: (row: TelemetryRow) => number | null;
}

const MB = 2 ** 20;
const scale = (v: number | null, by: number): number | null => (v === null ? null : v / by);

/** The original article's six panels, in its order. */
export const SIX_PANELS: readonly Panel[] = [
  { id: 'active', title: 'Active queries (issued, unanswered)', yLabel: 'queries', pick: (r) => r.active_number_of_queries },
  { id: 'failed', title: 'Failed queries per second', yLabel: 'queries/s', pick: (r) => r.failed_number_of_queries },
  { id: 'processed', title: 'Processed queries per second', yLabel: 'queries/s', pick: (r) => r.number_of_queries_processed },
  { id: 'latency', title: 'Mean query latency', yLabel: 'ms', pick: (r) => scale(r.average_query_time_us, 1000) },
  { id: 'cpu', title: 'Client CPU', yLabel: 'CPU ms per s', pick: (r) => r.cpu_milliseconds },
  { id: 'memory', title: 'Client memory (RSS)', yLabel: 'MB', pick: (r) => scale(r.memory_bytes, MB) },
];

const POOLER_PANELS: readonly Panel[] = [
  { id: 'pooler-cpu', title: 'Pooler CPU', yLabel: 'CPU ms per s', pick: (r) => r.pooler_cpu_milliseconds },
  { id: 'pooler-memory', title: 'Pooler memory (RSS)', yLabel: 'MB', pick: (r) => scale(r.pooler_rss_bytes, MB) },
];

function seriesOf(run: VariantRun, pick: (row: TelemetryRow) => number | null, color: string, suffix = '', dashed = false): Series {
  return { name: `${run.variant}${suffix}`, color, dashed, points: run.rows.map((row, i) => [i + 1, pick(row)] as const) };
}

function panelChart(scenario: string, panel: Panel, runs: readonly VariantRun[]): string {
  const series = runs.map((run, i) => seriesOf(run, panel.pick, PALETTE[i % PALETTE.length] ?? '#000'));
  // The offered rate next to what was processed shows overload at a glance.
  if (panel.id === 'processed') {
    runs.forEach((run, i) => series.push(seriesOf(run, (r) => r.offered_per_sec, PALETTE[i % PALETTE.length] ?? '#000', ' offered', true)));
  }
  return lineChart({ id: `${scenario}:${panel.id}`, title: panel.title, xLabel: 'seconds', yLabel: panel.yLabel, series });
}

function percentileChart(scenario: string, runs: readonly VariantRun[]): string {
  const series: Series[] = [];
  runs.forEach((run, i) => {
    const color = PALETTE[i % PALETTE.length] ?? '#000';
    series.push(seriesOf(run, (r) => scale(r.p50_us, 1000), color, ' p50'));
    series.push(seriesOf(run, (r) => scale(r.p99_us, 1000), color, ' p99', true));
  });
  return lineChart({ id: `${scenario}:percentiles`, title: 'Latency p50 / p99 per second', xLabel: 'seconds', yLabel: 'ms', series });
}

const fmt = (v: number | null, digits = 2): string => (v === null ? '—' : String(+v.toFixed(digits)));
const ms = (us: number): string => fmt(us / 1000, 3);

function percentileTable(runs: readonly VariantRun[]): string {
  const head = '<tr><th>variant</th><th>sessions</th><th>offered</th><th>processed</th><th>failed</th><th>mean ms</th><th>p50 ms</th><th>p90 ms</th><th>p99 ms</th><th>p99.9 ms</th><th>max ms</th><th>peak RSS MB</th><th>RTT ms</th><th>open ms</th></tr>';
  const body = runs.map((run) => {
    const f = variantFigures(run);
    const l = run.latency;
    const failures = Object.entries(run.failures).filter(([, n]) => n > 0).map(([k, n]) => `${k}: ${n}`).join(', ');
    return `<tr><td>${escapeXml(run.variant)}</td><td>${run.sessions}</td><td>${run.offered}</td><td>${run.processed}</td><td title="${escapeXml(failures)}">${run.failed}</td><td>${ms(l.meanUs)}</td><td>${ms(l.p50Us)}</td><td>${ms(l.p90Us)}</td><td>${ms(l.p99Us)}</td><td>${ms(l.p999Us)}</td><td>${ms(l.maxUs)}</td><td>${f.peakRssMB}</td><td>${fmt(run.rttMs)}</td><td>${f.openMs}</td></tr>`;
  });
  return `<table class="percentiles">${head}${body.join('')}</table>`;
}

function ratioTable(runs: readonly VariantRun[]): string {
  const rows = headlineRatios(runs);
  if (rows.length === 0) return '<p class="note">One variant only: no ratios.</p>';
  const body = rows.map(
    (r) => `<tr><td>${escapeXml(r.metric)}</td><td>${escapeXml(r.baseline)}: ${fmt(r.baselineValue)}</td><td>${escapeXml(r.other)}: ${fmt(r.otherValue)}</td><td><b>${r.ratio === null ? '—' : `${fmt(r.ratio, 3)}x`}</b></td></tr>`,
  );
  return `<table class="ratios"><tr><th>metric</th><th>baseline</th><th>variant</th><th>variant / baseline</th></tr>${body.join('')}</table>`;
}

function runsSection(name: string, runs: readonly VariantRun[]): string {
  const hasPooler = runs.some((run) => run.rows.some((r) => r.pooler_cpu_milliseconds !== null));
  const panels = [...SIX_PANELS, ...(hasPooler ? POOLER_PANELS : [])].map((p) => panelChart(name, p, runs));
  const rtt = runs.find((r) => r.rttMs !== null)?.rttMs ?? null;
  return [
    `<p>Measured RTT: <b>${rtt === null ? 'none (no WAN emulation)' : `${fmt(rtt)} ms`}</b></p>`,
    `<div class="grid">${panels.join('\n')}\n${percentileChart(name, runs)}</div>`,
    '<h3>Latency percentiles (whole run)</h3>',
    percentileTable(runs),
    ...runs.filter((run) => (run.errors ?? []).length > 0).map((run) => `<p class="note">${escapeXml(run.variant)} errors: ${escapeXml((run.errors ?? []).join(' | '))}</p>`),
    '<h3>Headline ratios</h3>',
    ratioTable(runs),
  ].join('\n');
}

function notesList(notes: readonly string[] | undefined): string {
  if (notes === undefined || notes.length === 0) return '';
  return `<h3>Findings</h3><ul class="findings">${notes.map((n) => `<li>${escapeXml(n)}</li>`).join('')}</ul>`;
}

function extraTable(extra: Record<string, number | string | boolean | null> | undefined): string {
  if (extra === undefined || Object.keys(extra).length === 0) return '';
  const body = Object.entries(extra)
    .map(([k, v]) => `<tr><td>${escapeXml(k)}</td><td>${escapeXml(v === null ? '—' : String(v))}</td></tr>`)
    .join('');
  return `<table class="extra"><tr><th>figure</th><th>value</th></tr>${body}</table>`;
}

function lanTable(tps: Record<string, number | null>, pgbench: Record<string, number | null> | null): string {
  const targets = Object.keys(tps);
  const head = `<tr><th>target</th><th>our generator q/s</th><th>pgbench tps</th></tr>`;
  const body = targets.map((t) => `<tr><td>${escapeXml(t)}</td><td>${fmt(tps[t] ?? null, 0)}</td><td>${pgbench === null ? 'not installed' : fmt(pgbench[t] ?? null, 0)}</td></tr>`).join('');
  return `<table class="lan">${head}${body}</table>`;
}

function scenarioSection(result: ScenarioResult): string {
  const title = `<h2 id="${escapeXml(result.name)}">${escapeXml(result.name)}: ${escapeXml(result.title)}</h2>`;
  switch (result.kind) {
    case 'load':
      return `<section data-scenario="${escapeXml(result.name)}">${title}<p>${escapeXml(result.description)} Ramp ${result.ramp.startRate} → ${result.ramp.endRate} q/s over ${result.ramp.durationMs / 1000} s, open loop.</p>${notesList(result.notes)}${extraTable(result.extra)}${runsSection(result.name, result.runs)}</section>`;
    case 'lan':
      return `<section data-scenario="${escapeXml(result.name)}">${title}<p>${escapeXml(result.description)}</p>${lanTable(result.tps, result.pgbench)}${notesList(result.notes)}${runsSection(result.name, result.runs)}</section>`;
    case 'capacity': {
      const steps = result.steps.map((s) => `<tr><td>${s.sessions}</td><td>${s.qps}</td><td>${s.failed}</td></tr>`).join('');
      return `<section data-scenario="${escapeXml(result.name)}">${title}<p>${escapeXml(result.description)}</p><p class="headline">Capacity: <b>${result.qps} queries/s</b> (best at ${result.bestSessions} sessions)</p><table><tr><th>sessions</th><th>q/s</th><th>failed</th></tr>${steps}</table>${runsSection(result.name, result.runs)}</section>`;
    }
    case 'unavailable':
      return `<section data-scenario="${escapeXml(result.name)}" class="unavailable">${title}<p>Skipped: needs ${escapeXml(result.needs)}.</p></section>`;
    default: {
      const never: never = result;
      return never;
    }
  }
}

export function renderReport(data: ReportData): string {
  const css = `body{font-family:sans-serif;margin:24px;color:#222;max-width:1480px}
.grid{display:grid;grid-template-columns:repeat(3,460px);gap:10px}
table{border-collapse:collapse;margin:8px 0;font-size:13px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f3f3f3}.unavailable{color:#777}.note{color:#777}.headline{font-size:18px}section{margin-bottom:32px}`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>quicpool benchmark ${escapeXml(data.createdAt)}</title><style>${css}</style></head>
<body>
<h1>quicpool benchmark</h1>
<p>${escapeXml(data.createdAt)} · <code>${escapeXml(data.command)}</code></p>
<p class="machine">Machine: ${escapeXml(machineLine(data.machine))}</p>
<p class="note">Workload: <code>SELECT trunc(random() * 100) FROM generate_series(1, 10)</code>. One row per second per variant; variants run one after the other, never at once.</p>
${data.results.map(scenarioSection).join('\n')}
</body></html>
`;
}
