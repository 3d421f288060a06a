// Counts what the load generator does (issued, answered, failed, latency) and turns it into one
// telemetry row per interval with the original benchmark's semantics: "active" is issued and not
// yet answered (including the client-side backlog), "processed" and "failed" are per interval, CPU
// is the client process's utime+stime delta and memory its RSS. The other processes' columns
// (pooler, forwarder, Postgres) are left empty here: the bench's parent process fills them from
// /proc, so that reading them costs the client nothing.
import { Histogram } from './histogram.js';
import type { TelemetryRow } from './csv.js';

export type FailureReason = 'queue-full' | 'timeout' | 'error' | 'closed';

export const FAILURE_REASONS: readonly FailureReason[] = ['queue-full', 'timeout', 'error', 'closed'];

export class LoadRecorder {
  private activeCount = 0;
  private issuedTotal = 0;
  private processedTotal = 0;
  private failedTotal = 0;
  private intervalIssued = 0;
  private intervalProcessed = 0;
  private intervalFailed = 0;
  readonly failures: Record<FailureReason, number> = { 'queue-full': 0, timeout: 0, error: 0, closed: 0 };
  /** Latencies (µs) of the current interval; folded into `total` at each sample. */
  readonly interval = new Histogram();
  readonly total = new Histogram();

  issued(): void {
    this.activeCount += 1;
    this.issuedTotal += 1;
    this.intervalIssued += 1;
  }

  completed(latencyUs: number): void {
    this.activeCount -= 1;
    this.processedTotal += 1;
    this.intervalProcessed += 1;
    this.interval.record(latencyUs);
  }

  /** The first few distinct error messages (reason 'error'), so a report can say what went wrong. */
  readonly errorSamples: string[] = [];

  failed(reason: FailureReason, error?: unknown): void {
    if (reason === 'error' && error !== undefined && this.errorSamples.length < 5) {
      const message = error instanceof Error ? `${'code' in error ? `${String(error.code)}: ` : ''}${error.message}` : String(error);
      if (!this.errorSamples.includes(message)) this.errorSamples.push(message);
    }
    this.activeCount -= 1;
    this.failedTotal += 1;
    this.intervalFailed += 1;
    this.failures[reason] += 1;
  }

  get active(): number {
    return this.activeCount;
  }

  totals(): { issued: number; processed: number; failed: number; active: number } {
    return { issued: this.issuedTotal, processed: this.processedTotal, failed: this.failedTotal, active: this.activeCount };
  }

  /** Ends the current interval: its counts, and its latencies moved into the run's histogram. */
  takeInterval(): { issued: number; processed: number; failed: number; meanUs: number | null; p50Us: number | null; p99Us: number | null; maxUs: number | null } {
    const h = this.interval;
    const empty = h.count === 0;
    const result = {
      issued: this.intervalIssued,
      processed: this.intervalProcessed,
      failed: this.intervalFailed,
      // No answer in the interval = no latency to report (an empty cell, not a misleading 0).
      meanUs: empty ? null : h.mean,
      p50Us: empty ? null : h.percentile(50),
      p99Us: empty ? null : h.percentile(99),
      maxUs: empty ? null : h.max,
    };
    this.total.add(h);
    h.reset();
    this.intervalIssued = 0;
    this.intervalProcessed = 0;
    this.intervalFailed = 0;
    return result;
  }
}

export interface SamplerOptions {
  recorder: LoadRecorder;
  /** Default 1000 ms, as the original. */
  intervalMs?: number;
  /** Called with each row as it is produced. */
  onRow?: (row: TelemetryRow, index: number) => void;
  /** Wall clock for the timestamp column. Default Date.now. */
  now?: () => number;
}

/** Produces one row per interval from a recorder and this process's CPU and RSS. */
export class TelemetrySampler {
  readonly rows: TelemetryRow[] = [];
  private timer: NodeJS.Timeout | null = null;
  private lastCpu: NodeJS.CpuUsage = process.cpuUsage();
  private lastAt: number;
  private readonly now: () => number;
  private readonly intervalMs: number;

  constructor(private readonly options: SamplerOptions) {
    this.now = options.now ?? Date.now;
    this.intervalMs = options.intervalMs ?? 1000;
    this.lastAt = this.now();
  }

  start(): void {
    this.lastCpu = process.cpuUsage();
    this.lastAt = this.now();
    this.timer = setInterval(() => this.sample(), this.intervalMs);
  }

  /** Takes one row now (the timer calls this; tests may too). */
  sample(): TelemetryRow {
    const at = this.now();
    const seconds = Math.max(1e-3, (at - this.lastAt) / 1000);
    this.lastAt = at;
    const cpuNow = process.cpuUsage();
    const cpu = { user: cpuNow.user - this.lastCpu.user, system: cpuNow.system - this.lastCpu.system };
    this.lastCpu = cpuNow;
    const interval = this.options.recorder.takeInterval();
    const row: TelemetryRow = {
      timestamp_ms: at,
      active_number_of_queries: this.options.recorder.active,
      failed_number_of_queries: interval.failed,
      number_of_queries_processed: interval.processed,
      average_query_time_us: interval.meanUs === null ? null : Math.round(interval.meanUs),
      cpu_milliseconds: Math.round((cpu.user + cpu.system) / 1000),
      memory_bytes: process.memoryUsage.rss(),
      p50_us: interval.p50Us,
      p99_us: interval.p99Us,
      max_us: interval.maxUs,
      // Issued per second over this interval: what the schedule offered, for the x-axis of overload.
      offered_per_sec: Math.round(interval.issued / seconds),
      pooler_cpu_milliseconds: null,
      pooler_rss_bytes: null,
      rtt_ms: null,
      forwarder_cpu_milliseconds: null,
      postgres_cpu_milliseconds: null,
      other_cpu_milliseconds: null,
      client_cpu_us_per_query: null,
      forwarder_cpu_us_per_query: null,
      pooler_cpu_us_per_query: null,
      postgres_cpu_us_per_query: null,
    };
    this.rows.push(row);
    this.options.onRow?.(row, this.rows.length - 1);
    return row;
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }
}
