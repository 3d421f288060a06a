// Tiny real runs of every scenario, as `pnpm bench` runs them: the capacity measurement and the
// scale it sets, real packet paths (as root; CI is root), real quicpool daemons, real client
// processes in their namespaces, real Postgres; then the report. Structure only (CSV columns,
// per-process CPU columns, the headline section, one PNG per scenario, nothing left behind) and
// the path's one invariant (the measured RTT is never below the configured one); never timings.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type {} from '@quicpool/pg-fixture';
import { pathNamespaces } from '../netpath/namespaces.js';
import { packetPathUnavailableReason } from '../netpath/netpath.js';
import { findChromium } from '../report/chromium.js';
import { SIX_PANELS } from '../report/html.js';
import { CSV_COLUMNS, parseCsv } from '../telemetry/csv.js';
import { findPgbouncer } from '../stack/pgbouncer.js';
import { buildBenchScript } from '../../test/build-bench.js';
import { SCENARIO_NAMES } from './plans.js';
import type { BenchOptions, BenchOutcome } from './run-bench.js';
import { runBench } from './run-bench.js';
import type { ScenarioResult } from './types.js';

const pg = inject('pg');
const unavailable = packetPathUnavailableReason();
const DELAY_MS = 5;
let built: { script: string; remove: () => void };

const options = (o: Partial<BenchOptions>): BenchOptions => ({
  quick: true,
  workers: 1,
  originalExact: false,
  seedScale: false,
  delayMs: DELAY_MS,
  rampSeconds: 1,
  probeSeconds: 1,
  lossRate: 0.01,
  steadyRate: null,
  pgbouncer: false,
  scenarios: SCENARIO_NAMES,
  rounds: 1,
  peak: null,
  path: 'auto',
  congestionControl: 'cubic',
  seed: 1,
  out: null,
  png: true,
  command: 'test',
  ...o,
});

/** Every run's report folder, removed once the file's tests are done. */
const outDirs: string[] = [];

async function bench(o: Partial<BenchOptions>): Promise<BenchOutcome> {
  const out = await mkdtemp(join(tmpdir(), 'bench-test-'));
  outDirs.push(out);
  const target = { host: pg.host, port: pg.port, user: pg.user, password: pg.password, database: pg.database };
  return runBench(options({ ...o, out }), { pg: target, script: built.script, log: () => undefined });
}

/** Processes still running one of our programs (the built bench, its daemon state, the forwarder). */
/** This checkout (its daemon's path tells ours from another checkout's bench running on the same machine). */
const checkout = fileURLToPath(new URL('../../../../', import.meta.url));

/**
 * A candidate is another run's when it names another process's path (qpwc-<pid>-: the forwarder
 * and the watchdog) or is the daemon of another checkout; anything else counts as ours.
 */
function ofThisRun(cmd: string): boolean {
  const path = /qpwc-(\d+)-/.exec(cmd);
  if (path !== null) return Number(path[1]) === process.pid;
  return !cmd.includes('/apps/pooler/') || cmd.includes(checkout);
}

function leftoverProcesses(marker: string): string[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d) && Number(d) !== process.pid)
    .flatMap((pid) => {
      try {
        const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
        const candidate = cmd.includes(marker) || cmd.includes('quicpool-bench-') || cmd.includes('quicpool-netpath-');
        return candidate && ofThisRun(cmd) ? [`${pid}: ${cmd}`] : [];
      } catch {
        return [];
      }
    });
}

const hostTuns = (): string => execFileSync('ip', ['-o', 'link', 'show', 'type', 'tun'], { encoding: 'utf8' });
const pngHeight = (file: string): number => readFileSync(file).readUInt32BE(20);
const ran = (results: readonly ScenarioResult[], name: string): Extract<ScenarioResult, { kind: 'ran' }> => {
  const r = results.find((x) => (x.kind === 'ran' ? x.plan.name : x.name) === name);
  if (r === undefined || r.kind !== 'ran') throw new Error(`${name}: ${r?.kind === 'unavailable' ? r.needs : 'missing'}`);
  return r;
};

beforeAll(() => {
  built = buildBenchScript();
});
afterAll(async () => {
  built?.remove();
  await Promise.all(outDirs.map((d) => rm(d, { recursive: true, force: true })));
});

describe.runIf(unavailable === null)('every scenario over the packet-level path', () => {
  let outcome: BenchOutcome;
  beforeAll(async () => {
    outcome = await bench({});
  }, 240_000);

  it('scales the WAN scenarios from the measured capacity', () => {
    expect(outcome.scale.source).toBe('capacity');
    expect(outcome.scale.capacity?.tcp).toBeGreaterThan(0);
    expect(outcome.scale.peak).toBe(Math.round(0.7 * Math.min(outcome.scale.capacity?.tcp ?? 0, outcome.scale.capacity?.quic ?? 0)));
    const original = ran(outcome.results, 'original');
    const quic = original.plan.variants[1]?.client;
    const tcp = original.plan.variants[0]?.client;
    expect(tcp?.kind === 'pg' && quic?.kind === 'quic' && quic.connections * quic.streams).toBeGreaterThanOrEqual(tcp?.kind === 'pg' ? 3 * tcp.sessions : Infinity);
  });

  it('runs every variant of every scenario to the end, each over its own measured path', () => {
    expect(outcome.setup.wanPath).toBe('packet');
    for (const name of SCENARIO_NAMES) {
      const r = ran(outcome.results, name);
      expect(r.rounds).toHaveLength(1);
      expect(r.rounds[0]?.map((run) => run.variant)).toEqual(r.plan.variants.map((v) => v.name));
      for (const [i, run] of (r.rounds[0] ?? []).entries()) {
        expect(run.result.processed + run.result.failed).toBe(run.result.offered);
        expect(run.result.processed).toBeGreaterThan(0);
        if (r.plan.wan === null || r.plan.variants[i]?.route === 'postgres') continue;
        expect(run.path.mode).toBe('packet');
        // An early path is a bug: the measured RTT is never below the configured one.
        expect(run.path.rttMs).toBeGreaterThanOrEqual(2 * r.plan.wan.delayMs);
      }
      expect(r.answer.length).toBeGreaterThan(20);
    }
    const loss = ran(outcome.results, 'loss');
    for (const run of loss.rounds[0] ?? []) expect((run.path.randomDrops?.[0] ?? 0) + (run.path.randomDrops?.[1] ?? 0)).toBeGreaterThan(0);
  });

  it('writes a CSV per run with the seed columns first and every process CPU column filled', async () => {
    const report = outcome.report;
    expect(report.csvFiles.length).toBe(outcome.results.reduce((n, r) => n + (r.kind === 'ran' ? r.rounds.flat().length : 0), 0));
    for (const file of report.csvFiles) {
      const csv = parseCsv(await readFile(file, 'utf8'));
      expect(csv.header).toEqual([...CSV_COLUMNS]);
      expect(csv.rows.length).toBeGreaterThanOrEqual(1);
      const name = file.split('/').at(-1) ?? '';
      const direct = name.startsWith('direct-') || name.startsWith('capacity-postgres');
      for (const column of ['cpu_milliseconds', 'postgres_cpu_milliseconds', 'other_cpu_milliseconds', ...(direct ? [] : ['pooler_cpu_milliseconds', 'forwarder_cpu_milliseconds', 'rtt_ms'])]) {
        expect(csv.rows.every((row) => row[column] !== null), `${name}: ${column}`).toBe(true);
      }
    }
    const summary = JSON.parse(await readFile(report.summaryFile, 'utf8')) as { setup: { wanPath: string }; figures: Record<string, Record<string, unknown> | null> };
    expect(summary.setup.wanPath).toBe('packet');
    expect(typeof summary.figures.original?.tcpPlateauOverBound).toBe('number');
    expect(Object.keys(summary.figures.original ?? {})).toEqual(expect.arrayContaining(['tcp', 'quic', 'rttMs', 'answer', 'roundStats']));
  });

  it('puts the question, one answer per scenario and the six panels first, then one section per scenario', async () => {
    const html = await readFile(outcome.report.htmlFile, 'utf8');
    const headline = html.slice(0, html.indexOf('</header>'));
    expect(headline).toContain(`Does multiplexing beat TCP pooling for a client ${2 * DELAY_MS} ms away?`);
    expect(headline).toContain('packet-level path');
    expect(headline).toContain('cubic on both sides');
    for (const name of SCENARIO_NAMES) expect(headline).toContain(`<b>${name}</b>:`);
    for (const panel of SIX_PANELS) expect(headline).toMatch(new RegExp(`data-panel="headline-original:${panel.id}"[\\s\\S]*?<path d="M`));
    const sections = [...html.matchAll(/<section data-scenario="(\w+)"/g)].map((m) => m[1]);
    expect(sections).toEqual(['original', 'sockets', 'fair', 'loss', 'connect', 'capacity', 'direct']);
  });

  it('renders report.png and one PNG per scenario, none taller than 2,000 px', () => {
    if (findChromium() === null) {
      expect(outcome.report.png).toEqual({ skipped: expect.stringContaining('chromium not installed') });
      return;
    }
    const files = 'files' in outcome.report.png ? outcome.report.png.files : [];
    expect(files.map((f) => f.split('/').at(-1)).sort()).toEqual(['report.png', ...SCENARIO_NAMES.map((n) => `${n}.png`)].sort());
    for (const file of files) {
      expect(existsSync(file)).toBe(true);
      expect(pngHeight(file)).toBeLessThanOrEqual(2_000);
    }
  });

  it('leaves nothing behind: no namespace, no TUN, no daemon, forwarder or client process', () => {
    expect(pathNamespaces(process.pid)).toEqual([]);
    expect(hostTuns()).not.toMatch(new RegExp(`qph${process.pid}-`));
    expect(leftoverProcesses(built.script)).toEqual([]);
  });
});

describe('PgBouncer as the reference of the original scenario (--pgbouncer)', () => {
  it('runs the TCP + TLS clients through PgBouncer over the same path, its CPU in the pooler columns', async () => {
    const options = { scenarios: ['original'] as const, peak: 100, png: false, pgbouncer: true };
    if (findPgbouncer() === null) {
      // Not installed: refused before anything runs.
      await expect(bench(options)).rejects.toThrow('PgBouncer is not installed');
      return;
    }
    const outcome = await bench(options);
    const original = ran(outcome.results, 'original');
    expect(original.rounds[0]?.map((run) => run.variant)).toEqual(['tcp', 'quic', 'pgbouncer']);
    const run = original.rounds[0]?.[2];
    expect(run?.result.failed).toBe(0);
    expect(run?.result.processed).toBe(run?.result.offered);
    expect(run?.path.rttMs).toBeGreaterThanOrEqual(2 * DELAY_MS);
    const csv = parseCsv(await readFile(outcome.report.csvFiles.find((f) => f.includes('original-pgbouncer')) ?? 'missing', 'utf8'));
    expect(csv.rows.length).toBeGreaterThanOrEqual(1);
    expect(csv.rows.every((row) => row['pooler_cpu_milliseconds'] !== null)).toBe(true);
    expect(leftoverProcesses(built.script)).toEqual([]);
  }, 180_000);
});

describe('the relay when the packet path is not used', () => {
  it('runs on the relay, says so first, and skips loss with the reason', async () => {
    const outcome = await bench({ path: 'relay', scenarios: ['original', 'loss'], peak: 200, png: false });
    const original = ran(outcome.results, 'original');
    for (const run of original.rounds[0] ?? []) {
      expect(run.path.mode).toBe('relay');
      expect(run.path.rttMs).toBeGreaterThanOrEqual(2 * DELAY_MS);
    }
    expect(outcome.results.find((r) => r.kind === 'unavailable')).toMatchObject({ name: 'loss', needs: expect.stringContaining('packet-level path') });
    const html = await readFile(outcome.report.htmlFile, 'utf8');
    expect(html.slice(0, html.indexOf('<ul class="answers">'))).toContain('NOT the packet-level path');
    expect(leftoverProcesses(built.script)).toEqual([]);
  }, 120_000);
});
