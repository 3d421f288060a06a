import { describe, expect, it } from 'vitest';
import type { TelemetryRow } from '../telemetry/csv.js';
import type { VariantRun } from './types.js';
import { lastSecondsRate, littleBound, ratio } from './wan-figures.js';

const row = (processed: number): TelemetryRow => ({
  timestamp_ms: 0,
  active_number_of_queries: 0,
  failed_number_of_queries: 0,
  number_of_queries_processed: processed,
  average_query_time_us: null,
  cpu_milliseconds: 0,
  memory_bytes: 1,
  p50_us: null,
  p99_us: null,
  max_us: null,
  offered_per_sec: 0,
  pooler_cpu_milliseconds: null,
  pooler_rss_bytes: null,
  rtt_ms: null,
});

const run = (processed: number[], rampRows: number): VariantRun => ({
  scenario: 's',
  variant: 'tcp',
  sessions: 50,
  rows: processed.map(row),
  rampRows,
  offered: 0,
  issued: 0,
  processed: 0,
  failed: 0,
  failures: { 'queue-full': 0, timeout: 0, error: 0, closed: 0 },
  latency: { meanUs: 0, p50Us: 0, p90Us: 0, p99Us: 0, p999Us: 0, maxUs: 0 },
  rttMs: 30,
  openMs: 0,
  durationMs: 0,
});

describe('scenario figures', () => {
  it('averages the last seconds of the ramp, not the drain after it', () => {
    // 8 ramp rows then 2 drain rows: the last 5 ramp rows are 40..80.
    expect(lastSecondsRate(run([10, 20, 30, 40, 50, 60, 70, 80, 999, 999], 8), 5)).toBe(60);
    expect(lastSecondsRate(run([10, 20], 2), 5)).toBe(15); // fewer rows than asked
    expect(lastSecondsRate(run([], 0), 5)).toBe(0);
  });

  it("gives Little's-law bounds: sessions / (round trips x RTT)", () => {
    expect(littleBound(50, 30)).toBe(1667);
    expect(littleBound(500, 30, 2)).toBe(8333);
    expect(littleBound(50, null)).toBeNull();
    expect(ratio(3, 2)).toBe(1.5);
    expect(ratio(3, 0)).toBeNull();
  });
});
