// Tiny real runs (a couple of seconds each) of `original`, `sockets`, `fair`, `loss` and `lan`
// against the test run's Postgres: real pooler processes, real WAN emulator processes, real QUIC
// and TCP clients, each variant in its own process as in `pnpm bench`. Structure only (columns,
// figures present, report panels, cleanup), never a timed assertion on performance.
import { execFileSync } from 'node:child_process';
import { readFile, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type {} from '@quicpool/pg-fixture';
import { SIX_PANELS } from '../report/html.js';
import { describeMachine } from '../report/machine.js';
import type { WrittenReport } from '../report/write.js';
import { writeReport } from '../report/write.js';
import { CSV_COLUMNS, parseCsv } from '../telemetry/csv.js';
import { netnsUnavailableReason } from '../netns/lossy-netns.js';
import { lanScenario } from './lan.js';
import { buildBenchScript } from './stack/build-script.js';
import type { ScenarioContext, ScenarioResult } from './types.js';
import { fairScenario, lossScenario, originalScenario, socketsScenario } from './wan-scenarios.js';

const pg = inject('pg');
let built: { script: string; remove: () => void };
let results: ScenarioResult[] = [];
let report: WrittenReport;
const lossSkipped = netnsUnavailableReason();

beforeAll(async () => {
  built = buildBenchScript();
  const ctx: ScenarioContext = {
    pg: { host: pg.host, port: pg.port, user: pg.user, password: pg.password, database: pg.database },
    quick: true,
    originalExact: false,
    script: built.script,
    onProgress: () => undefined,
    log: () => undefined,
    overrides: { ramp: { startRate: 20, endRate: 60, durationMs: 1000 }, sessionScale: 0.01, delayMs: 5, lanSeconds: 1 },
  };
  // The scenarios share nothing but Postgres (own processes, ports, namespace): run them at once to
  // keep the test short. Their variants still run one after the other within each scenario.
  results = await Promise.all([originalScenario, socketsScenario, fairScenario, lossScenario, lanScenario].map((scenario) => scenario.run(ctx)));
  report = await writeReport({ results, machine: describeMachine(), command: 'test', dir: await mkdtemp(join(tmpdir(), 'bench-wan-')), png: false });
}, 120_000);

afterAll(() => built?.remove());

const load = (name: string) => {
  const r = results.find((x) => x.name === name);
  if (r === undefined || r.kind !== 'load') throw new Error(`${name}: ${r?.kind === 'unavailable' ? r.needs : 'missing'}`);
  return r;
};

describe('WAN scenarios through real pooler, WAN emulator and QUIC/TCP clients', () => {
  it('runs TCP then QUIC in original, sockets and fair, answering every query', () => {
    for (const name of ['original', 'sockets', 'fair']) {
      const r = load(name);
      expect(r.runs.map((run) => run.variant)).toEqual(['tcp', 'quic']);
      for (const run of r.runs) {
        expect(run.offered).toBe(40); // 20 -> 60 q/s over 1 s
        expect(run.processed + run.failed).toBe(40);
        expect(run.failed).toBe(0);
        expect(run.rttMs).toBeGreaterThanOrEqual(10); // 2 x 5 ms, measured by the emulator
        expect(run.fds).toBeGreaterThan(0);
        expect(run.rows.some((row) => (row.pooler_rss_bytes ?? 0) > 0)).toBe(true);
      }
      expect(r.runs[1]?.info?.transport).toBe('quic');
      expect(r.runs[0]?.info?.transport).toBe('tcp+tls');
    }
  });

  it('computes each scenario\'s own figures', async () => {
    const summary = JSON.parse(await readFile(report.summaryFile, 'utf8')) as { figures: Record<string, Record<string, unknown> | null> };
    for (const name of ['original', 'sockets', 'fair']) {
      const f = summary.figures[name]!;
      expect(Object.keys(f)).toEqual(expect.arrayContaining(['rttMs', 'offered', 'tcp', 'quic']));
      for (const side of ['tcp', 'quic']) {
        expect(Object.keys(f[side] as object)).toEqual(expect.arrayContaining(['processed', 'failed', 'peakProcessedPerSec', 'peakMeanLatencyMs', 'p99Ms', 'peakRssMB']));
      }
    }
    expect(summary.figures.original?.tcpLittleBoundPerSec).toBeGreaterThan(0);
    expect(summary.figures.sockets?.tcpLast5sPerSec).toBeGreaterThan(0);
    expect(summary.figures.sockets?.quicLast5sPerSec).toBeGreaterThan(0);
    expect(summary.figures.fair?.tcpFds).toBeGreaterThan(0);
    expect(summary.figures.fair?.quicConnectMs).toBeGreaterThan(0);
  });

  it('runs loss over a real lossy network namespace, or says why not, and always removes it', async () => {
    const r = results.find((x) => x.name === 'loss')!;
    if (lossSkipped !== null) {
      console.log(`[loss test] skipped: ${lossSkipped}`);
      expect(r).toMatchObject({ kind: 'unavailable', needs: expect.stringContaining(lossSkipped) });
    } else {
      const loss = load('loss');
      for (const run of loss.runs) {
        expect(run.processed + run.failed).toBe(40);
        expect(run.info?.lossMethod).toMatch(/iptables statistic/);
        expect(typeof run.info?.droppedUp).toBe('number');
      }
      expect(loss.extra?.lossMethod).toMatch(/network namespace/);
      const namespaces = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' });
      const used = loss.runs.map((run) => /namespace (\S+)/.exec(String(run.info?.lossMethod))?.[1] ?? '');
      for (const name of used) {
        expect(name).toMatch(/^qpbench-\d+-\d+$/);
        expect(namespaces).not.toContain(name); // deleted when the variant ended
      }
    }
  });

  it('runs lan against direct, quicpool TCP, quicpool QUIC (and PgBouncer / pgbench when installed)', () => {
    const r = results.find((x) => x.name === 'lan')!;
    expect(r.kind).toBe('lan');
    if (r.kind !== 'lan') return;
    expect(r.tps.direct).toBeGreaterThan(0);
    expect(r.tps['quicpool-tcp']).toBeGreaterThan(0);
    expect(r.tps['quicpool-quic']).toBeGreaterThan(0);
    expect(r.runs.map((run) => run.variant).slice(0, 3)).toEqual(['direct', 'quicpool-tcp', 'quicpool-quic']);
    for (const run of r.runs) expect(run.failed).toBe(0);
    if (r.pgbench !== null) expect(r.pgbench['quicpool-tcp']).toBeGreaterThan(0);
  });

  it('writes one CSV per variant with the telemetry columns, and the six panels per scenario', async () => {
    const expected = results.flatMap((r) => (r.kind === 'unavailable' ? [] : r.runs.map((run) => `${run.scenario}-${run.variant}.csv`)));
    expect(report.csvFiles.map((f) => f.split('/').at(-1))).toEqual(expected);
    for (const file of report.csvFiles) {
      const csv = parseCsv(await readFile(file, 'utf8'));
      expect(csv.header).toEqual([...CSV_COLUMNS]);
      expect(csv.rows.length).toBeGreaterThanOrEqual(1);
    }
    const html = await readFile(report.htmlFile, 'utf8');
    for (const r of results) {
      if (r.kind === 'unavailable') continue;
      for (const panel of SIX_PANELS) expect(html).toMatch(new RegExp(`<svg[^>]*data-panel="${r.name}:${panel.id}"[\\s\\S]*?<path d="M`));
    }
    expect(html).toContain('Findings');
  });
});
