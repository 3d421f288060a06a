// Counts what the load generator does and turns it into one telemetry row per interval, with the original's semantics
// (docs/benchmark.md); the other processes' columns are left to the bench's parent (/proc, at no cost to the client).
import { Histogram } from './histogram.js';
import type { TelemetryRow } from './csv.js';
import { EMPTY_ROW } from './csv.js';

export type FailureReason = 'queue-full' | 'timeout' | 'error' | 'closed';

export class LoadRecorder {
  /** Issued, answered and failed so far, and as they stood when the last interval ended. */
  private readonly counts = { issued: 0, processed: 0, failed: 0 };
  private taken = { ...this.counts };
  readonly failures: Record<FailureReason, number> = { 'queue-full': 0, timeout: 0, error: 0, closed: 0 };
  /** Latencies (µs) of the current interval; folded into `total` at each sample. */
  private interval = new Histogram();
  readonly total = new Histogram();
  /** The first few distinct error messages (reason 'error'), so a report can say what went wrong. */
  readonly errorSamples: string[] = [];

  issued(): void {
    this.counts.issued += 1;
  }

  completed(latencyUs: number): void {
    this.counts.processed += 1;
    this.interval.record(latencyUs);
  }

  failed(reason: FailureReason, error?: unknown): void {
    if (reason === 'error' && error !== undefined && this.errorSamples.length < 5) {
      const message = error instanceof Error ? `${'code' in error ? `${String(error.code)}: ` : ''}${error.message}` : String(error);
      if (!this.errorSamples.includes(message)) this.errorSamples.push(message);
    }
    this.counts.failed += 1;
    this.failures[reason] += 1;
  }

  /** So far; active: issued and not yet answered or failed. */
  totals(): { issued: number; processed: number; failed: number; active: number } {
    const c = this.counts;
    return { ...c, active: c.issued - c.processed - c.failed };
  }

  /** Ends the current interval: its counts, and its latencies moved into the run's histogram. */
  takeInterval(): { issued: number; processed: number; failed: number; meanUs: number | null; p50Us: number | null; p99Us: number | null; maxUs: number | null } {
    const h = this.interval;
    const { counts: c, taken: t } = this;
    // No answer in the interval = no latency to report (an empty cell, not a misleading 0).
    const latency =
      h.count === 0 ? { meanUs: null, p50Us: null, p99Us: null, maxUs: null } : { meanUs: h.mean, p50Us: h.percentile(50), p99Us: h.percentile(99), maxUs: h.max };
    const result = { issued: c.issued - t.issued, processed: c.processed - t.processed, failed: c.failed - t.failed, ...latency };
    this.taken = { ...c };
    this.total.add(h);
    this.interval = new Histogram();
    return result;
  }
}

/** Produces one row per second (as the original) from a recorder and this process's CPU and RSS. */
export class TelemetrySampler {
  private sampled = 0;
  private timer: NodeJS.Timeout | null = null;
  private lastCpu: NodeJS.CpuUsage = process.cpuUsage();
  private lastAt = Date.now();

  constructor(private readonly options: { recorder: LoadRecorder; onRow?: (row: TelemetryRow, index: number) => void }) {}

  start(): void {
    this.lastCpu = process.cpuUsage();
    this.lastAt = Date.now();
    this.timer = setInterval(() => this.sample(), 1000);
  }

  /** Takes one row now (the timer calls this; tests may too). */
  sample(): TelemetryRow {
    const at = Date.now();
    const seconds = Math.max(1e-3, (at - this.lastAt) / 1000);
    this.lastAt = at;
    const cpuNow = process.cpuUsage();
    const cpu = { user: cpuNow.user - this.lastCpu.user, system: cpuNow.system - this.lastCpu.system };
    this.lastCpu = cpuNow;
    const interval = this.options.recorder.takeInterval();
    const row: TelemetryRow = {
      ...EMPTY_ROW,
      timestamp_ms: at,
      active_number_of_queries: this.options.recorder.totals().active,
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
    };
    this.options.onRow?.(row, this.sampled++);
    return row;
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }
}
