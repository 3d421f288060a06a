// The figures of one variant run, computed once and shared by the terminal table, summary.json,
// the --json line and the HTML report, so they can never disagree: throughput and latency, and
// where the CPU went (per process, per step of the load, and split into a fixed cost per second
// and a cost per query by a straight-line fit over the seconds of the run).
import type { VariantRun } from '../scenarios/types.js';
import type { TelemetryRow } from '../telemetry/csv.js';
import { PROCESS_CPU } from '../telemetry/csv.js';

export type ProcessName = (typeof PROCESS_CPU)[number]['process'];

const round = (value: number, digits = 2): number => Number(value.toFixed(digits));
const sum = (rows: readonly TelemetryRow[], pick: (r: TelemetryRow) => number | null): number => rows.reduce((s, r) => s + (pick(r) ?? 0), 0);

export interface StepFigures {
  readonly label: string;
  readonly seconds: number;
  readonly qps: number;
  /** CPU ms per second per process (null: not measured) */
  readonly msPerSec: Readonly<Record<ProcessName, number | null>>;
  /** CPU µs per query per process. */
  readonly usPerQuery: Readonly<Record<ProcessName, number | null>>;
  /** The whole machine's busy CPU ms per second (these processes and everything else). */
  readonly machineMsPerSec: number | null;
}

export interface CpuFit {
  /** CPU per second that does not depend on the load (timers, polling, keep-alives). */
  readonly fixedMsPerSec: number;
  /** CPU per query on top of it. */
  readonly usPerQuery: number;
}

export interface VariantFigures {
  readonly sessions: number;
  readonly offered: number;
  readonly processed: number;
  readonly failed: number;
  readonly peakProcessedPerSec: number;
  /** Mean latency of the queries answered in the last 3 s of the load (the peak offered rate). */
  readonly peakMeanLatencyMs: number | null;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  readonly peakActive: number;
  readonly peakRssMB: number;
  /** Mean client CPU over the run, ms per second (1000 = one core). */
  readonly meanCpuMsPerSec: number;
  readonly poolerPeakRssMB: number | null;
  readonly openMs: number;
  readonly rttMs: number | null;
  readonly fds: number | null;
  readonly poolerFds: number | null;
  /** The probe (low constant rate), then the load in steps. */
  readonly steps: readonly StepFigures[];
  readonly cpuFit: Readonly<Record<ProcessName, CpuFit | null>>;
}

function stepOf(label: string, rows: readonly TelemetryRow[]): StepFigures {
  const processed = sum(rows, (r) => r.number_of_queries_processed);
  const seconds = rows.length;
  const msPerSec = {} as Record<ProcessName, number | null>;
  const usPerQuery = {} as Record<ProcessName, number | null>;
  for (const p of PROCESS_CPU) {
    const known = rows.some((r) => r[p.ms] !== null);
    const ms = sum(rows, (r) => r[p.ms]);
    msPerSec[p.process] = known && seconds > 0 ? round(ms / seconds, 1) : null;
    usPerQuery[p.process] = known && processed > 0 ? round((ms * 1000) / processed, 1) : null;
  }
  const other = rows.some((r) => r.other_cpu_milliseconds !== null);
  const machine = sum(rows, (r) => r.other_cpu_milliseconds) + PROCESS_CPU.reduce((t, p) => t + sum(rows, (r) => r[p.ms]), 0);
  return { label, seconds, qps: seconds === 0 ? 0 : round(processed / seconds, 1), msPerSec, usPerQuery, machineMsPerSec: other && seconds > 0 ? round(machine / seconds, 0) : null };
}

/** Load steps: the closed loop's own; an open ramp cut into five equal parts. */
export function stepFigures(run: VariantRun): StepFigures[] {
  const steps: StepFigures[] = [];
  if (run.probeRows.length > 0) steps.push(stepOf('probe', run.probeRows));
  const load = run.rows.slice(0, run.loadRows);
  const closed = new Set(run.rowSteps).size > 1 || run.scenario === 'capacity';
  if (closed) {
    for (const step of [...new Set(run.rowSteps.slice(0, run.loadRows))]) steps.push(stepOf(`step ${step + 1}`, load.filter((_, i) => run.rowSteps[i] === step)));
    return steps;
  }
  const parts = Math.min(5, load.length);
  for (let i = 0; i < parts; i++) steps.push(stepOf(`${i + 1}/${parts}`, load.slice(Math.floor((i * load.length) / parts), Math.floor(((i + 1) * load.length) / parts))));
  return steps;
}

/** Least squares of CPU ms per second against queries per second, over the probe's and the load's seconds. */
export function cpuFit(rows: readonly TelemetryRow[], ms: (r: TelemetryRow) => number | null): CpuFit | null {
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

export function variantFigures(run: VariantRun): VariantFigures {
  const rows = run.rows;
  const r = run.result;
  const peakWindow = rows.slice(Math.max(0, run.loadRows - 3), run.loadRows);
  let weighted = 0;
  let answered = 0;
  for (const row of peakWindow) {
    if (row.average_query_time_us === null) continue;
    weighted += row.average_query_time_us * (row.number_of_queries_processed ?? 0);
    answered += row.number_of_queries_processed ?? 0;
  }
  const pooler = rows.map((x) => x.pooler_rss_bytes).filter((v): v is number => v !== null);
  const fitRows = [...run.probeRows, ...rows.slice(0, run.loadRows)];
  const fit = {} as Record<ProcessName, CpuFit | null>;
  for (const p of PROCESS_CPU) fit[p.process] = cpuFit(fitRows, (x) => x[p.ms]);
  return {
    sessions: r.sessions,
    offered: r.offered,
    processed: r.processed,
    failed: r.failed,
    peakProcessedPerSec: Math.max(0, ...rows.map((x) => x.number_of_queries_processed ?? 0)),
    peakMeanLatencyMs: answered === 0 ? null : round(weighted / answered / 1000, 3),
    p50Ms: round(r.latency.p50Us / 1000, 3),
    p99Ms: round(r.latency.p99Us / 1000, 3),
    maxMs: round(r.latency.maxUs / 1000, 3),
    peakActive: Math.max(0, ...rows.map((x) => x.active_number_of_queries ?? 0)),
    peakRssMB: round(Math.max(0, ...rows.map((x) => x.memory_bytes ?? 0)) / 2 ** 20, 1),
    meanCpuMsPerSec: rows.length === 0 ? 0 : Math.round(sum(rows, (x) => x.cpu_milliseconds) / rows.length),
    poolerPeakRssMB: pooler.length === 0 ? null : round(Math.max(...pooler) / 2 ** 20, 1),
    openMs: Math.round(r.openMs),
    rttMs: run.path.rttMs === null ? null : round(run.path.rttMs, 3),
    fds: r.fds,
    poolerFds: run.poolerFds,
    steps: stepFigures(run),
    cpuFit: fit,
  };
}

/** Mean processed per second over the last `seconds` rows of the load (fewer if it is shorter). */
export function lastSecondsRate(run: Pick<VariantRun, 'rows' | 'loadRows'>, seconds: number): number {
  const rows = run.rows.slice(Math.max(0, run.loadRows - seconds), run.loadRows);
  return rows.length === 0 ? 0 : round(sum(rows, (r) => r.number_of_queries_processed) / rows.length, 1);
}

/** Little's law: at most `sessions` queries in flight, each taking at least `trips` RTTs. */
export function littleBound(sessions: number, rttMs: number | null, roundTripsPerQuery = 1): number | null {
  if (rttMs === null || rttMs <= 0) return null;
  return Math.round((sessions * 1000) / (rttMs * roundTripsPerQuery));
}

export const ratio = (a: number | null | undefined, b: number | null | undefined): number | null =>
  a === null || a === undefined || b === null || b === undefined || b === 0 ? null : round(a / b, 3);
