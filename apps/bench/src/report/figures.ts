// The figures of one variant run, computed once for the terminal, summary.json, --json and the HTML report, so they never
// disagree: throughput, latency, and where the CPU went (per process, per step, and as a fixed cost plus a cost per query).
import type { VariantRun } from '../scenarios/types.js';
import type { TelemetryRow } from '../telemetry/csv.js';
import { PROCESS_CPU } from '../telemetry/csv.js';

export type ProcessName = (typeof PROCESS_CPU)[number]['process'];
export type StepFigures = ReturnType<typeof stepOf>;
export type VariantFigures = ReturnType<typeof variantFigures>;

const round = (value: number, digits = 2): number => Number(value.toFixed(digits));
const sum = (rows: readonly TelemetryRow[], pick: (r: TelemetryRow) => number | null): number => rows.reduce((s, r) => s + (pick(r) ?? 0), 0);
const perProcess = <T>(value: (p: (typeof PROCESS_CPU)[number]) => T): Record<ProcessName, T> =>
  Object.fromEntries(PROCESS_CPU.map((p) => [p.process, value(p)])) as Record<ProcessName, T>;

function stepOf(label: string, rows: readonly TelemetryRow[]) {
  const processed = sum(rows, (r) => r.number_of_queries_processed);
  const seconds = rows.length;
  // Each process's CPU over the step, once: null when it was not measured.
  const ms = perProcess((p) => (rows.some((r) => r[p.ms] !== null) ? sum(rows, (r) => r[p.ms]) : null));
  const machine = sum(rows, (r) => r.other_cpu_milliseconds) + PROCESS_CPU.reduce((t, p) => t + (ms[p.process] ?? 0), 0);
  const per = (divide: (cpuMs: number) => number | null) => perProcess((p) => {
    const cpu = ms[p.process];
    return cpu === null ? null : divide(cpu);
  });
  return {
    label,
    seconds,
    qps: seconds === 0 ? 0 : round(processed / seconds, 1),
    /** CPU ms per second per process (null: not measured) */
    msPerSec: per((cpu) => (seconds > 0 ? round(cpu / seconds, 1) : null)),
    /** CPU µs per query per process. */
    usPerQuery: per((cpu) => (processed > 0 ? round((cpu * 1000) / processed, 1) : null)),
    /** The whole machine's busy CPU ms per second (these processes and everything else). */
    machineMsPerSec: rows.some((r) => r.other_cpu_milliseconds !== null) && seconds > 0 ? round(machine / seconds, 0) : null,
  };
}

/** The probe (low constant rate), then the load in steps: the closed loop's own; an open ramp cut into five equal parts. */
function stepFigures(run: VariantRun): StepFigures[] {
  const steps: StepFigures[] = [];
  if (run.probeRows.length > 0) steps.push(stepOf('probe', run.probeRows));
  const load = run.rows.slice(0, run.loadRows);
  if (new Set(run.rowSteps).size > 1 || run.scenario === 'capacity') {
    for (const step of [...new Set(run.rowSteps.slice(0, run.loadRows))]) steps.push(stepOf(`step ${step + 1}`, load.filter((_, i) => run.rowSteps[i] === step)));
    return steps;
  }
  const parts = Math.min(5, load.length);
  for (let i = 0; i < parts; i++) steps.push(stepOf(`${i + 1}/${parts}`, load.slice(Math.floor((i * load.length) / parts), Math.floor(((i + 1) * load.length) / parts))));
  return steps;
}

/** The step of the load (not the probe) that answered the most queries per second. */
export const busiestStep = (f: VariantFigures): StepFigures | null =>
  f.steps.filter((s) => s.label !== 'probe').reduce<StepFigures | null>((best, s) => (best === null || s.qps > best.qps ? s : best), null);

// Least squares of CPU ms per second against queries per second over the probe's and the load's seconds: `fixedMsPerSec`
// is the CPU per second that does not depend on the load (timers, polling, keep-alives), `usPerQuery` the CPU per query on top.
export function cpuFit(rows: readonly TelemetryRow[], ms: (r: TelemetryRow) => number | null): { fixedMsPerSec: number; usPerQuery: number } | null {
  const points = rows.flatMap((r) => {
    const y = ms(r);
    return y === null ? [] : [[r.number_of_queries_processed ?? 0, y] as const];
  });
  if (points.length < 3) return null;
  // A line through a single load level says nothing about fixed against per-query cost.
  const xs = points.map(([x]) => x);
  if (Math.max(...xs) - Math.min(...xs) < Math.max(10, 0.5 * Math.max(...xs))) return null;
  const n = points.length;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  const sxx = points.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  if (sxx === 0) return null;
  const slope = points.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0) / sxx;
  return { fixedMsPerSec: round(Math.max(0, my - slope * mx), 1), usPerQuery: round(slope * 1000, 1) };
}

/** Mean latency (ms) of the queries answered in these rows (each row's mean weighted by its answers); null: none answered. */
export function meanLatencyMs(rows: readonly TelemetryRow[]): number | null {
  const timed = rows.filter((r) => r.average_query_time_us !== null);
  const answered = sum(timed, (r) => r.number_of_queries_processed);
  return answered === 0 ? null : sum(timed, (r) => (r.average_query_time_us ?? 0) * (r.number_of_queries_processed ?? 0)) / answered / 1000;
}

// Memoised by run: the terminal table, summary.json and the HTML report each ask for the same run's figures.
const figuresOf = new WeakMap<VariantRun, ReturnType<typeof computeFigures>>();

export function variantFigures(run: VariantRun): ReturnType<typeof computeFigures> {
  let f = figuresOf.get(run);
  if (f === undefined) figuresOf.set(run, (f = computeFigures(run)));
  return f;
}

function computeFigures(run: VariantRun) {
  const rows = run.rows;
  const r = run.result;
  const peakMean = meanLatencyMs(rows.slice(Math.max(0, run.loadRows - 3), run.loadRows));
  const pooler = rows.map((x) => x.pooler_rss_bytes).filter((v): v is number => v !== null);
  const fitRows = [...run.probeRows, ...rows.slice(0, run.loadRows)];
  return {
    sessions: r.sessions,
    offered: r.offered,
    processed: r.processed,
    failed: r.failed,
    peakProcessedPerSec: Math.max(0, ...rows.map((x) => x.number_of_queries_processed ?? 0)),
    /** Mean latency of the queries answered in the last 3 s of the load (the peak offered rate). */
    peakMeanLatencyMs: peakMean === null ? null : round(peakMean, 3),
    p50Ms: round(r.latency.p50Us / 1000, 3),
    p99Ms: round(r.latency.p99Us / 1000, 3),
    maxMs: round(r.latency.maxUs / 1000, 3),
    peakActive: Math.max(0, ...rows.map((x) => x.active_number_of_queries ?? 0)),
    peakRssMB: round(Math.max(0, ...rows.map((x) => x.memory_bytes ?? 0)) / 2 ** 20, 1),
    /** Mean client CPU over the run, ms per second (1000 = one core). */
    meanCpuMsPerSec: rows.length === 0 ? 0 : Math.round(sum(rows, (x) => x.cpu_milliseconds) / rows.length),
    poolerPeakRssMB: pooler.length === 0 ? null : round(Math.max(...pooler) / 2 ** 20, 1),
    openMs: Math.round(r.openMs),
    rttMs: run.path.rttMs === null ? null : round(run.path.rttMs, 3),
    fds: r.fds,
    poolerFds: run.poolerFds,
    steps: stepFigures(run),
    cpuFit: perProcess((p) => cpuFit(fitRows, (x) => x[p.ms])),
  };
}

/** Mean processed per second over the last `seconds` rows of the load (fewer if it is shorter). */
export function lastSecondsRate(run: Pick<VariantRun, 'rows' | 'loadRows'>, seconds: number): number {
  const rows = run.rows.slice(Math.max(0, run.loadRows - seconds), run.loadRows);
  return rows.length === 0 ? 0 : round(sum(rows, (r) => r.number_of_queries_processed) / rows.length, 1);
}

/** The measured RTT of the first of these runs that crossed a path. */
export const rttOf = (runs: readonly VariantRun[]): number | null => runs.find((r) => r.path.rttMs !== null)?.path.rttMs ?? null;

/** Little's law: at most `sessions` queries in flight, each taking at least `trips` RTTs. */
export function littleBound(sessions: number, rttMs: number | null, roundTripsPerQuery = 1): number | null {
  return rttMs === null || rttMs <= 0 ? null : Math.round((sessions * 1000) / (rttMs * roundTripsPerQuery));
}

export const ratio = (a: number | null | undefined, b: number | null | undefined): number | null =>
  a === null || a === undefined || b === null || b === undefined || b === 0 ? null : round(a / b, 3);
