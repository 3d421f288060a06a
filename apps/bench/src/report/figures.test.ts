import { describe, expect, it } from 'vitest';
import { withProcessCpu } from '../scenarios/run-variant.js';
import type { TelemetryRow } from '../telemetry/csv.js';
import { CSV_COLUMNS } from '../telemetry/csv.js';
import { cpuFit, lastSecondsRate, littleBound, ratio } from './figures.js';

const row = (processed: number, cpu = 0): TelemetryRow => ({
  ...(Object.fromEntries(CSV_COLUMNS.map((c) => [c, null])) as TelemetryRow),
  number_of_queries_processed: processed,
  cpu_milliseconds: cpu,
});
const run = (processed: number[], loadRows: number) => ({ rows: processed.map((p) => row(p)), loadRows });

describe('figures', () => {
  it('averages the last seconds of the load, not the drain after it', () => {
    expect(lastSecondsRate(run([10, 20, 30, 40, 50, 60, 70, 80, 999, 999], 8), 5)).toBe(60);
    expect(lastSecondsRate(run([10, 20], 2), 5)).toBe(15);
    expect(lastSecondsRate(run([], 0), 5)).toBe(0);
  });

  it("gives Little's-law walls: sessions / (round trips x RTT)", () => {
    expect(littleBound(50, 30)).toBe(1667);
    expect(littleBound(500, 30, 2)).toBe(8333);
    expect(littleBound(50, null)).toBeNull();
    expect(ratio(3, 2)).toBe(1.5);
    expect(ratio(3, 0)).toBeNull();
  });

  it('splits CPU into a fixed cost per second and a cost per query, and refuses a single load level', () => {
    // 20 ms/s fixed + 100 µs per query.
    const rows = [10, 200, 400, 800].map((q) => row(q, 20 + q * 0.1));
    expect(cpuFit(rows, (r) => r.cpu_milliseconds)).toEqual({ fixedMsPerSec: 20, usPerQuery: 100 });
    expect(cpuFit([row(20, 5), row(21, 5), row(20, 6)], (r) => r.cpu_milliseconds)).toBeNull();
  });

  it('adds the other processes\' CPU to a row, per query too, and the rest of the machine', () => {
    const r = withProcessCpu(row(200, 40), { forwarderMs: 10, poolerMs: 30, poolerRssBytes: 1 << 20, postgresMs: 20, machineMs: 150 });
    expect(r).toMatchObject({ forwarder_cpu_milliseconds: 10, pooler_cpu_milliseconds: 30, postgres_cpu_milliseconds: 20, other_cpu_milliseconds: 50 });
    expect(r).toMatchObject({ client_cpu_us_per_query: 200, forwarder_cpu_us_per_query: 50, pooler_cpu_us_per_query: 150, postgres_cpu_us_per_query: 100 });
    expect(withProcessCpu(row(0, 5), { forwarderMs: null, poolerMs: null, poolerRssBytes: null, postgresMs: 1, machineMs: null }).pooler_cpu_us_per_query).toBeNull();
  });
});
