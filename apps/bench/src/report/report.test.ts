// The report from synthetic runs (no Postgres needed): structure, and that Chromium really draws it.
import { mkdtemp, readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { TelemetryRow } from '../telemetry/csv.js';
import type { ScenarioResult, VariantRun } from '../scenarios/types.js';
import { CHROMIUM_MISSING, dumpDom, findChromium, screenshot } from './chromium.js';
import { headlineRatios, scenarioFigures } from './figures.js';
import { SIX_PANELS } from './html.js';
import { describeMachine } from './machine.js';
import { writeReport } from './write.js';

function rows(n: number, rate: number): TelemetryRow[] {
  return Array.from({ length: n }, (_, i) => ({
    timestamp_ms: 1_700_000_000_000 + i * 1000,
    active_number_of_queries: i * 3,
    failed_number_of_queries: i === n - 1 ? 2 : 0,
    number_of_queries_processed: rate * (i + 1),
    average_query_time_us: 1000 + i * 100,
    cpu_milliseconds: 50 + i,
    memory_bytes: 80 * 2 ** 20 + i * 2 ** 20,
    p50_us: 900,
    p99_us: 3000 + i,
    max_us: 4000,
    offered_per_sec: rate * (i + 1),
    pooler_cpu_milliseconds: null,
    pooler_rss_bytes: null,
    rtt_ms: 30.5,
  }));
}

function run(variant: string, rate: number): VariantRun {
  return {
    scenario: 'synthetic',
    variant,
    sessions: 10,
    rows: rows(5, rate),
    rampRows: 5,
    offered: rate * 15,
    issued: rate * 15,
    processed: rate * 15 - 2,
    failed: 2,
    failures: { 'queue-full': 0, timeout: 2, error: 0, closed: 0 },
    latency: { meanUs: 1200, p50Us: 900, p90Us: 2000, p99Us: 3000, p999Us: 3900, maxUs: 4000 },
    rttMs: 30.5,
    openMs: 12,
    durationMs: 5000,
  };
}

const results: ScenarioResult[] = [
  { kind: 'load', name: 'synthetic', title: 'Synthetic', description: 'made-up rows', ramp: { startRate: 10, endRate: 50, durationMs: 5000 }, runs: [run('tcp', 10), run('quic', 20)] },
  { kind: 'unavailable', name: 'original', title: 'Original', needs: 'the pooler' },
];

const savedPath = process.env.CHROMIUM_PATH;
afterEach(() => {
  if (savedPath === undefined) delete process.env.CHROMIUM_PATH;
  else process.env.CHROMIUM_PATH = savedPath;
});

describe('report', () => {
  it('computes figures and ratios, and null for scenarios that could not run', () => {
    const first = results[0]!;
    const figures = scenarioFigures(first);
    expect(Object.keys(figures!)).toEqual(['rttMs', 'offered', 'tcp', 'quic']);
    expect(figures!.rttMs).toBe(30.5);
    expect(scenarioFigures(results[1]!)).toBeNull();
    const ratios = headlineRatios(first.kind === 'load' ? first.runs : []);
    expect(ratios.find((r) => r.metric === 'peak processed/s')?.ratio).toBe(2);
  });

  it('writes CSVs, summary.json and a self-contained report.html with the six panels', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'bench-report-'));
    const written = await writeReport({ results, machine: describeMachine(), command: 'test', dir, png: false });
    expect(written.csvFiles.map((f) => f.slice(dir.length + 1))).toEqual(['synthetic-tcp.csv', 'synthetic-quic.csv']);
    const summary = JSON.parse(await readFile(join(dir, 'summary.json'), 'utf8')) as Record<string, unknown>;
    expect(Object.keys(summary)).toEqual(['createdAt', 'command', 'machine', 'figures', 'notAvailable', 'runs']);
    expect(summary.notAvailable).toEqual({ original: 'the pooler' });
    const html = await readFile(written.htmlFile, 'utf8');
    for (const panel of SIX_PANELS) expect(html).toContain(`data-panel="synthetic:${panel.id}"`);
    expect(html).toContain('Skipped: needs the pooler');
    expect(html).not.toMatch(/<script|https?:\/\/(?!www\.w3\.org\/2000\/svg)/); // nothing to fetch
  });

  it('draws in headless Chromium, or reports plainly that Chromium is not installed', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'bench-report-'));
    const written = await writeReport({ results, machine: describeMachine(), command: 'test', dir, png: false });
    if (findChromium() === null) {
      console.log(`[report test] ${CHROMIUM_MISSING}`);
      const outcome = await dumpDom(written.htmlFile);
      expect(outcome).toEqual({ ok: false, reason: CHROMIUM_MISSING });
      return;
    }
    const dom = await dumpDom(written.htmlFile);
    expect(dom.ok).toBe(true);
    if (!dom.ok) return;
    // Every panel's SVG survived parsing and holds one drawn line per variant.
    for (const panel of SIX_PANELS) {
      const svg = new RegExp(`<svg[^>]*data-panel="synthetic:${panel.id}"[\\s\\S]*?</svg>`).exec(dom.output)?.[0] ?? '';
      const drawn = [...svg.matchAll(/<path d="(M[^"]+)"/g)].map((m) => m[1]);
      expect(drawn.length, panel.id).toBeGreaterThanOrEqual(2);
    }
    const png = join(dir, 'report.png');
    const shot = await screenshot(written.htmlFile, png, 1480, 2000);
    expect(shot.ok).toBe(true);
    expect(existsSync(png)).toBe(true);
  }, 120_000);

  it('treats a missing Chromium as an outcome, not an error', async () => {
    process.env.CHROMIUM_PATH = ''; // pretend none is installed
    expect(findChromium()).toBeNull();
    const dir = await mkdtemp(join(tmpdir(), 'bench-report-'));
    const written = await writeReport({ results, machine: describeMachine(), command: 'test', dir });
    expect(written.png).toEqual({ skipped: CHROMIUM_MISSING });
  });
});
