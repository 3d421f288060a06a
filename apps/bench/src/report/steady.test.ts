import { describe, expect, it } from 'vitest';
import type { TelemetryRow } from '../telemetry/csv.js';
import { CSV_COLUMNS } from '../telemetry/csv.js';
import type { ScenarioResult, VariantRun } from '../scenarios/types.js';
import { steadyFigures, steadyJson } from './steady.js';

const row = (processed: number, meanUs: number, poolerMs: number): TelemetryRow => ({
  ...(Object.fromEntries(CSV_COLUMNS.map((c) => [c, null])) as TelemetryRow),
  number_of_queries_processed: processed,
  average_query_time_us: meanUs,
  pooler_cpu_milliseconds: poolerMs,
});

/** A run of `rows`, the last one the drain (not the load). */
const run = (variant: string, rows: TelemetryRow[]): VariantRun => ({ variant, rows, loadRows: rows.length - 1 }) as unknown as VariantRun;

describe('steady figures', () => {
  it("gives the pooler's CPU per query over the load and the first second against the seconds after, medians of rounds", () => {
    const drain = row(50, 1_000_000, 999);
    const result = {
      kind: 'ran',
      plan: { name: 'original' },
      rounds: [
        // 1,000 q/s, 150 ms of pooler CPU per second: 150 µs per query; first second 90 ms, then 30.
        [run('tcp', [row(1000, 90_000, 150), row(1000, 30_000, 150), row(1000, 30_000, 150), drain]), run('quic', [row(500, 40_000, 100), row(1500, 35_000, 100), drain])],
        [run('tcp', [row(1000, 60_000, 200), row(1000, 30_000, 200), row(1000, 30_000, 200), drain]), run('quic', [row(1000, 35_000, 120), row(1000, 35_000, 120), drain])],
        [run('tcp', [row(1000, 30_000, 100), row(1000, 30_000, 100), row(1000, 30_000, 100), drain]), run('quic', [row(1000, 70_000, 140), row(1000, 35_000, 140), drain])],
      ],
    } as unknown as Extract<ScenarioResult, { kind: 'ran' }>;
    const f = steadyFigures(result);
    expect(f.poolerUsPerQuery).toEqual({ tcp: 150, quic: 120 });
    expect(f.firstSecond['tcp']).toEqual({ firstMs: 60, laterMs: 30, ratio: 2 });
    // quic: ratios 40/35, 1, 2 -> median 40/35.
    expect(f.firstSecond['quic']).toEqual({ firstMs: 40, laterMs: 35, ratio: 1.14 });
  });

  it('keys the --json fields by variant, or scenario/variant when several scenarios ran', () => {
    const f = { poolerUsPerQuery: { tcp: 1 }, firstSecond: { tcp: { firstMs: 2, laterMs: 1, ratio: 2 } } };
    expect(steadyJson(new Map([['original', f]]))).toEqual({ steadyPoolerUsPerQuery: { tcp: 1 }, steadyFirstSecond: { tcp: f.firstSecond.tcp } });
    expect(Object.keys(steadyJson(new Map([['original', f], ['fair', f]])).steadyPoolerUsPerQuery)).toEqual(['original/tcp', 'fair/tcp']);
  });
});
