// A tiny real run (a few seconds) of `direct` and `capacity` against the test run's Postgres, and
// the report it produces. It checks structure only: never a timed assertion on performance.
import { existsSync } from 'node:fs';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inject, describe, expect, it, beforeAll } from 'vitest';
import type {} from '@quicpool/pg-fixture';
import { findChromium } from '../report/chromium.js';
import { SIX_PANELS } from '../report/html.js';
import { describeMachine } from '../report/machine.js';
import type { WrittenReport } from '../report/write.js';
import { writeReport } from '../report/write.js';
import { CSV_COLUMNS, parseCsv } from '../telemetry/csv.js';
import { capacityScenario } from './capacity.js';
import { directScenario } from './direct.js';
import type { ProgressEvent, ScenarioContext, ScenarioResult } from './types.js';

const pg = inject('pg');
const progress: ProgressEvent[] = [];
const ctx: ScenarioContext = {
  pg: { host: pg.host, port: pg.port, user: pg.user, password: pg.password, database: pg.database },
  quick: true,
  originalExact: false,
  onProgress: (event) => progress.push(event),
  log: () => undefined,
  script: null,
  overrides: { ramp: { startRate: 20, endRate: 100, durationMs: 2000 }, sessions: 4, capacitySessions: [2], capacityStepMs: 1000 },
};

let results: ScenarioResult[] = [];
let report: WrittenReport;

beforeAll(async () => {
  results = [await directScenario.run(ctx), await capacityScenario.run(ctx)];
  const dir = await mkdtemp(join(tmpdir(), 'bench-direct-'));
  report = await writeReport({ results, machine: describeMachine(), command: 'test', dir });
}, 90_000);

describe('direct scenario against a real Postgres', () => {
  it('answers every query of both variants (1 and 2 round trips)', () => {
    const direct = results[0]!;
    expect(direct.kind).toBe('load');
    if (direct.kind !== 'load') return;
    expect(direct.runs.map((r) => r.variant)).toEqual(['pg', 'pg-prepare']);
    for (const run of direct.runs) {
      expect(run.offered).toBe(120); // 20 -> 100 q/s over 2 s
      expect(run.issued).toBe(120);
      expect(run.processed + run.failed).toBe(120);
      expect(run.failed).toBe(0);
      // The rows add up to the totals: nothing is lost between intervals.
      expect(run.rows.reduce((s, r) => s + (r.number_of_queries_processed ?? 0), 0)).toBe(run.processed);
      expect(run.rows.at(-1)?.active_number_of_queries).toBe(0);
    }
    expect(progress.some((e) => e.scenario === 'direct' && e.variant === 'pg')).toBe(true);
  });

  it('writes CSVs with exactly the telemetry columns', async () => {
    expect(report.csvFiles.map((f) => f.split('/').at(-1))).toEqual(['direct-pg.csv', 'direct-pg-prepare.csv', 'capacity-closed-2.csv']);
    for (const file of report.csvFiles) {
      const csv = parseCsv(await readFile(file, 'utf8'));
      expect(csv.header).toEqual([...CSV_COLUMNS]);
      expect(csv.rows.length).toBeGreaterThanOrEqual(1);
      for (const row of csv.rows) {
        expect(row.memory_bytes).toBeGreaterThan(0);
        expect(row.pooler_rss_bytes).toBeNull(); // no pooler in these scenarios
        expect(row.rtt_ms).toBeNull(); // no WAN emulation
      }
    }
  });

  it('writes summary.json with the figures of every scenario run', async () => {
    const summary = JSON.parse(await readFile(report.summaryFile, 'utf8')) as { figures: Record<string, Record<string, unknown> | null>; notAvailable: Record<string, string> };
    expect(Object.keys(summary.figures)).toEqual(['direct', 'capacity']);
    expect(Object.keys(summary.figures.direct ?? {})).toEqual(['rttMs', 'offered', 'pg', 'pg-prepare']);
    expect(Object.keys(summary.figures.direct?.pg ?? {})).toEqual(
      expect.arrayContaining(['processed', 'failed', 'peakProcessedPerSec', 'peakMeanLatencyMs', 'p99Ms', 'peakRssMB']),
    );
    expect(summary.figures.capacity?.qps).toBeGreaterThan(0);
    expect(summary.notAvailable).toEqual({});
  });

  it('writes report.html with the six panels per scenario, and report.png when Chromium is installed', async () => {
    const html = await readFile(report.htmlFile, 'utf8');
    for (const scenario of ['direct', 'capacity']) {
      for (const panel of SIX_PANELS) expect(html).toMatch(new RegExp(`<svg[^>]*data-panel="${scenario}:${panel.id}"[\\s\\S]*?<path d="M`));
    }
    if (findChromium() === null) {
      console.log('[direct test] chromium not installed: report.png skipped');
      expect(report.png).toEqual({ skipped: expect.stringContaining('chromium not installed') });
    } else {
      expect(report.png).toEqual({ file: join(report.dir, 'report.png') });
      expect(existsSync(join(report.dir, 'report.png'))).toBe(true);
    }
  });
});
