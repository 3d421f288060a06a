// A whole benchmark run: choose the path (and say why), find Postgres and its postmaster, measure the capacity when a WAN
// scenario needs the scale, run every scenario R rounds, write the report; every process it starts is stopped by its end.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hostSysctl } from '../netpath/netpath.js';
import { describeMachine } from '../report/machine.js';
import { writeReport } from '../report/write.js';
import { findPgbouncer } from '../stack/pgbouncer.js';
import { postmasterPid } from '../stack/postgres.js';
import { choosePathMode } from '../stack/wan-path.js';
import type { PathMode } from '../stack/wan-path.js';
import type { Scale } from './plans.js';
import { planFor, scaleFromCapacity, seedScale } from './plans.js';
import type { benchOptionsOf } from './bench-options.js';
import type { BenchContext } from './run-variant.js';
import { runScenario } from './run-scenario.js';
import type { ScenarioName, ScenarioResult } from './types.js';

export type BenchOptions = ReturnType<typeof benchOptionsOf> & { /** The quicpool daemon's worker threads (workers.count). */ readonly workers: number };
export type BenchOutcome = Awaited<ReturnType<typeof runBench>>;

const WAN: readonly ScenarioName[] = ['original', 'sockets', 'fair', 'loss'];

/** How the run was set up, stated on the report's first screen. */
function setupFacts(o: BenchOptions, mode: PathMode, fallback: string | null, scale: Scale) {
  const cc = o.congestionControl;
  const host = hostSysctl('net/ipv4/tcp_congestion_control') ?? '?';
  // A new namespace starts from the host's default; the path sets it to cc when the allowed list has it.
  const nsDefault = (hostSysctl('net/ipv4/tcp_allowed_congestion_control') ?? '').split(' ').includes(cc) ? cc : host;
  const quic = cc === 'cubic' ? 'cubic on both sides (quiche\'s default in the daemon; set on the client to match)' : `${cc} on the client, but cubic in the daemon (it has no setting for quiche's congestion control): the sides differ`;
  const tcp =
    mode === 'packet'
      ? `${cc} on both sides (set on each side's route to the other: ip route ... congctl; net.ipv4.tcp_congestion_control is ${nsDefault} in the client namespace, ${host} on the host)`
      : `the host's default, ${host}, on each loopback leg (the relay terminates TCP)`;
  const tcpPaces = cc === 'bbr' ? 'Linux TCP paces (bbr)' : `Linux TCP does not pace with ${cc} (it paces with bbr or the fq qdisc, which this kernel lacks)`;
  const pacing = `${tcpPaces}; QUIC never paces: the quiche binding gives no send time JS could use (SendInfo.at is opaque).`;
  // fallback: why the relay was used instead of the packet path (null: the packet path ran).
  return { wanPath: mode, fallback, rttConfiguredMs: 2 * o.delayMs, congestion: { tcp, quic, pacing }, scale: scaleText(scale), rounds: o.rounds };
}

export type SetupFacts = ReturnType<typeof setupFacts>;

function scaleText(scale: Scale): string {
  const texts: Record<Scale['source'], string> = {
    seed: 'Load unscaled (--seed-scale): the original benchmark\'s 500 TCP sessions, 50 x 40 QUIC streams and 100 -> 5,000 q/s.',
    given: `Load scaled to a given peak of ${scale.peak} q/s (--peak).`,
    capacity: `Load scaled to the machine: the stack's capacity was ${scale.capacity?.tcp ?? '?'} q/s over TCP and ${scale.capacity?.quic ?? '?'} over QUIC (closed loop, no added delay); every WAN ramp peaks at 70% of the lower, ${scale.peak} q/s, and TCP's sessions put its Little's-law wall at half of that.`,
  };
  return texts[scale.source];
}

export async function runBench(o: BenchOptions, io: Pick<BenchContext, 'pg' | 'script' | 'log' | 'onRow'>) {
  const { mode, fallback } = choosePathMode(o.path, io.log);
  const pgbouncer = o.pgbouncer ? findPgbouncer() : null;
  if (o.pgbouncer && pgbouncer === null) throw new Error('--pgbouncer: PgBouncer is not installed (Debian: apt-get install pgbouncer)');
  const stateDir = mkdtempSync(join(tmpdir(), 'quicpool-bench-'));
  try {
    const postgresPid = await postmasterPid(io.pg);
    const { congestionControl, seed, workers } = o;
    const ctx: BenchContext = { ...io, postgresPid, pathMode: mode, stateDir: join(stateDir, 'daemon'), pgbouncer, congestionControl, seed, workers };
    const results: ScenarioResult[] = [];
    let scale: Scale = o.seedScale ? seedScale : { peak: o.peak ?? 0, source: 'given', capacity: null };
    const needsScale = !o.seedScale && o.peak === null && o.scenarios.some((s) => WAN.includes(s));
    if (needsScale || o.scenarios.includes('capacity')) {
      const capacity = await runScenario(ctx, planFor('capacity', o, scale), o.rounds);
      if (needsScale && capacity.kind === 'ran') {
        const tcp = capacity.figures.tcpQps?.median ?? null;
        const quic = capacity.figures.quicQps?.median ?? null;
        if (tcp === null || quic === null || tcp <= 0 || quic <= 0) throw new Error('capacity measured nothing: the WAN scenarios cannot be scaled');
        scale = scaleFromCapacity(Math.round(tcp), Math.round(quic));
        io.log(`capacity: TCP ${Math.round(tcp)} q/s, QUIC ${Math.round(quic)} q/s: every WAN ramp peaks at ${scale.peak} q/s`);
      }
      results.push(capacity);
    }
    for (const name of o.scenarios.filter((s) => s !== 'capacity')) {
      const plan = planFor(name, o, scale);
      if (plan.wan !== null && plan.wan.lossRate > 0 && mode !== 'packet') {
        results.push({ kind: 'unavailable', name, title: plan.title, needs: `the packet-level path for real loss of TCP segments (${fallback ?? ''})` });
        continue;
      }
      try {
        results.push(await runScenario(ctx, plan, o.rounds));
      } catch (error) {
        // One broken scenario must not cost the others (its processes are stopped by now).
        const message = error instanceof Error ? error.message : String(error);
        io.log(`${name} FAILED: ${message}`);
        results.push({ kind: 'failed', name, title: plan.title, error: message.slice(0, 2_000) });
      }
    }
    const setup = setupFacts(o, mode, fallback, scale);
    const report = await writeReport({ results, machine: describeMachine(), setup, command: o.command, ...(o.out === null ? {} : { dir: o.out }), png: o.png });
    return { results, scale, setup, report };
  } finally {
    rmSync(stateDir, { recursive: true, force: true });
  }
}
