// The driver matrix: programs that use psycopg 3, asyncpg, pg8000 (Python), pgjdbc (Java) and pgx v4
// (Go) as applications do (prepared statements past each driver's threshold, errors inside
// transactions, COPY, a large result, cursors and portals, pipelines and batches, 20 concurrent
// sessions) run straight against the run's Postgres and through quicpool in four set-ups; every
// pooled result must deep-equal the direct one. The drivers come from Debian (see README.md): under
// CI=true a missing one fails its tests with the package to install, elsewhere its tests pass and
// say what is missing.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRIVER_NAMES, DRIVERS, failedSteps, runProgram, running } from './programs.js';
import type { Command, DriverName, Outcome } from './programs.js';
import { pgInfo, POOL_SIZE, POOLED_SETUPS, SETUP_NAMES, startSetups } from './setups.js';
import type { SetupName, Setups } from './setups.js';

const CI = process.env.CI === 'true';
const VERBOSE = Boolean(process.env.QUICPOOL_DRIVERS_VERBOSE);
/** A schema the trust user owns, for the programs' tables (names carry driver and set-up too). */
const SCHEMA = `qp_drivers_${process.pid}`;

interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
}
function deferred<T>(): Deferred<T> {
  let resolve: (value: T) => void = () => undefined;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** What each driver lacks on this machine (null: installed), known once beforeAll ran. */
const missing = new Map<DriverName, Promise<string | null>>();
/** Each program run's outcome, by `${driver} ${set-up}`; set up front, settled as the runs finish. */
const outcomes = new Map<string, Deferred<Outcome | null>>();
for (const d of DRIVER_NAMES) for (const s of SETUP_NAMES) outcomes.set(`${d} ${s}`, deferred());

let setups: Setups | undefined;
let buildDir: string | undefined;
let allRuns: Promise<void> = Promise.resolve();
/** Set by afterAll when the runs outlast it: no program starts after that. */
let stopped = false;
const timings: string[] = [];

function outcome(d: DriverName, s: SetupName): Promise<Outcome | null> {
  const o = outcomes.get(`${d} ${s}`);
  if (o === undefined) throw new Error(`no run ${d} ${s}`);
  return o.promise;
}

/**
 * Every driver at once, each through the five set-ups in turn (direct first): at most one program
 * per driver runs at a time, and a driver still building (pgx: a cold Go build takes 10-20 s on two
 * cores) holds up no other. Programs share nothing but the poolers and Postgres (their tables are
 * their own). Never rejects: each run's outcome, or why it could not run, lands in `outcomes`.
 */
async function runAll(s: Setups, dir: string): Promise<void> {
  for (const driver of DRIVERS) missing.set(driver.name, driver.missing());
  await Promise.all(
    DRIVERS.map(async (driver) => {
      const why = await missing.get(driver.name);
      let cmd: Command | string;
      if (why != null) cmd = why;
      else {
        const started = Date.now();
        try {
          cmd = await driver.build(dir);
        } catch (e) {
          cmd = `${driver.name}: the build failed: ${e instanceof Error ? e.message : String(e)}`;
        }
        timings.push(`${driver.name} build ${Date.now() - started} ms`);
      }
      for (const setup of SETUP_NAMES) {
        const slot = outcomes.get(`${driver.name} ${setup}`);
        const endpoint = s.endpoints.get(setup);
        if (typeof cmd === 'string' || endpoint === undefined || stopped) {
          const error = typeof cmd === 'string' ? cmd : stopped ? 'not run: the test file was ending' : `no endpoint for ${setup}`;
          slot?.resolve(why != null ? null : { ok: false, error, ms: 0 });
          continue;
        }
        const o = await runProgram(cmd, endpoint, `${driver.name}_${setup.replace(/\W/g, '_')}`, SCHEMA);
        timings.push(`${driver.name} ${setup} ${o.ms} ms${o.ok ? '' : ' (failed)'}`);
        slot?.resolve(o);
      }
    }),
  );
}

async function withSuperuser(sql: string): Promise<void> {
  const c = new pg.Client({ host: pgInfo.host, port: pgInfo.port, user: pgInfo.user, password: pgInfo.password, database: pgInfo.database });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

beforeAll(async () => {
  buildDir = await mkdtemp(join(tmpdir(), 'qp-drivers-'));
  await withSuperuser(`drop schema if exists ${SCHEMA} cascade; create schema ${SCHEMA} authorization ${pgInfo.trustUser}`);
  setups = await startSetups();
  allRuns = runAll(setups, buildDir);
});

afterAll(async () => {
  // Every run ends by itself (each program has a timeout); this bound only keeps the hook's own.
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([allRuns, new Promise<void>((r) => (timer = setTimeout(r, 150_000)))]);
  clearTimeout(timer);
  stopped = true;
  // A program still running here outlived the bound: end it, and let the check below fail.
  const left = [...running];
  for (const child of left) child.kill('SIGKILL');
  await setups?.close();
  await withSuperuser(`drop schema if exists ${SCHEMA} cascade`);
  if (buildDir !== undefined) await rm(buildDir, { recursive: true, force: true });
  if (VERBOSE) console.log(`[drivers] ${timings.join('; ')}`);
  expect(left.map((c) => c.spawnfile)).toEqual([]);
}, 180_000);

const reported = new Set<DriverName>();
/**
 * true when the driver is not installed: under CI that fails the test (CI must run the whole
 * matrix; `.ci/run` installs the packages), elsewhere the test passes and says what to install.
 */
async function notInstalled(d: DriverName): Promise<boolean> {
  const why = await missing.get(d);
  if (why === null || why === undefined) return false;
  if (CI) throw new Error(`${why}. CI=true runs every driver of the matrix: install the package (.ci/run does, as root).`);
  expect(why).toMatch(/\(Debian: apt-get install .+\)$/);
  if (!reported.has(d)) console.log(`driver test without the driver: ${why}`);
  reported.add(d);
  return true;
}

/** A run's result, or the test's failure with the program's own error output. */
function resultOf(o: Outcome | null, what: string): unknown {
  if (o === null) throw new Error(`${what}: no run`);
  if (!o.ok) throw new Error(`${what} failed: ${o.error}`);
  return o.result;
}

// Each test waits for its run, and a driver's five runs (and its build) go one after another.
const TIMEOUT_MS = 300_000;

describe('drivers of other languages, direct and through quicpool', () => {
  for (const d of DRIVER_NAMES) {
    describe(d, () => {
      it('runs straight against PostgreSQL with every step succeeding', async () => {
        if (await notInstalled(d)) return;
        const result = resultOf(await outcome(d, 'direct'), `${d} direct`);
        expect(failedSteps(result)).toEqual([]);
        expect(result).toMatchObject({ driver: d, concurrent: { sessions: 20, ok: 20, errors: [] } });
      }, TIMEOUT_MS);

      for (const setup of POOLED_SETUPS) {
        it(`through ${setup}: the same result as direct`, async () => {
          if (await notInstalled(d)) return;
          const direct = resultOf(await outcome(d, 'direct'), `${d} direct`);
          const pooled = resultOf(await outcome(d, setup), `${d} through ${setup}`);
          expect(pooled).toEqual(direct);
        }, TIMEOUT_MS);
      }
    });
  }

  it(`transaction mode lent its ${POOL_SIZE} backends per transaction, not per session`, async () => {
    await allRuns;
    const installed = (await Promise.all(DRIVER_NAMES.map((d) => missing.get(d)))).filter((why) => why === null).length;
    const stats = setups?.poolers.get('transaction')?.stats();
    const pool = stats?.pools.find((p) => p.user === pgInfo.trustUser && p.database === pgInfo.database);
    if (installed === 0) {
      expect(stats?.clientsAcceptedTotal).toBe(0);
      return;
    }
    // Each program opens at least 21 sessions (one, then 20 at once), in two transaction-mode set-ups.
    expect(stats?.clientsAcceptedTotal).toBeGreaterThanOrEqual(installed * 2 * 21);
    expect(pool?.xactCountTotal).toBeGreaterThan(stats?.clientsAcceptedTotal ?? Infinity);
  }, TIMEOUT_MS);
});
