// Each scenario's own figures from one round's runs (Little's-law walls, plateaus, ratios, time to first row in RTTs
// ...), which of them decide its answer, and the answer: one sentence generated from the medians, never by hand.
import { cpus } from 'node:os';
import type { ProcessName, StepFigures, VariantFigures } from '../report/figures.js';
import { busiestStep, lastSecondsRate, littleBound, ratio, rttOf, variantFigures } from '../report/figures.js';
import { PROCESS_CPU } from '../telemetry/csv.js';
import { PEAK_SHARE } from './plans.js';
import type { RoundStat, ScenarioName, ScenarioPlan, VariantRun } from './types.js';

export type Figures = Record<string, number | null>;

const byName = (runs: readonly VariantRun[], name: string): VariantRun | undefined => runs.find((r) => r.variant === name);
const fig = (run: VariantRun | undefined): VariantFigures | null => (run === undefined ? null : variantFigures(run));
const share = (f: VariantFigures | null): number | null => (f === null || f.offered === 0 ? null : Number((f.processed / f.offered).toFixed(4)));
/** The last 5 s of the load; shorter loads (quick mode, tests) use their second half. */
const windowOf = (run: VariantRun | undefined): number => Math.max(1, Math.min(5, Math.floor((run?.loadRows ?? 2) / 2)));

/** Equal sessions (fair, loss): per figure TCP's then QUIC's (tcpP99Ms, quicP99Ms, tcpPeakLatencyOverRtt ... quicFailed). */
function fairFigures(runs: readonly VariantRun[]): Figures {
  const sides = [['tcp', fig(byName(runs, 'tcp'))], ['quic', fig(byName(runs, 'quic'))]] as const;
  const rtt = rttOf(runs);
  const out: Figures = { rttMs: rtt, p99QuicOverTcp: ratio(sides[1][1]?.p99Ms, sides[0][1]?.p99Ms) };
  const each: Record<string, (f: VariantFigures) => number | null> = {
    P99Ms: (f) => f.p99Ms,
    PeakLatencyOverRtt: (f) => ratio(f.peakMeanLatencyMs, rtt),
    Fds: (f) => f.fds,
    PoolerFds: (f) => f.poolerFds,
    ConnectMs: (f) => f.openMs,
    PeakRssMB: (f) => f.peakRssMB,
    Failed: (f) => f.failed,
  };
  for (const [name, pick] of Object.entries(each)) for (const [side, f] of sides) out[`${side}${name}`] = f === null ? null : pick(f);
  return out;
}

export function summarize(plan: ScenarioPlan, runs: readonly VariantRun[]): Figures {
  const rtt = rttOf(runs);
  switch (plan.name) {
    case 'capacity': {
      const best = (name: string): number | null => {
        const f = fig(byName(runs, name));
        return f === null ? null : (busiestStep(f)?.qps ?? 0);
      };
      return { tcpQps: best('tcp'), quicQps: best('quic'), postgresQps: best('postgres'), quicOverTcp: ratio(best('quic'), best('tcp')), rttMs: rtt };
    }
    case 'original': {
      const tcp = byName(runs, 'tcp');
      const t = fig(tcp);
      const q = fig(byName(runs, 'quic'));
      const bound = littleBound(t?.sessions ?? 0, rtt, plan.roundTripsPerQuery);
      const plateau = tcp === undefined ? null : lastSecondsRate(tcp, windowOf(tcp));
      return {
        rttMs: rtt,
        roundTripsPerQuery: plan.roundTripsPerQuery,
        tcpLittleBoundPerSec: bound,
        tcpPlateauPerSec: plateau,
        tcpPlateauOverBound: ratio(plateau, bound),
        tcpProcessedShare: share(t),
        tcpPeakBacklog: t?.peakActive ?? null,
        tcpFailed: t?.failed ?? null,
        tcpPeakLatencyOverRtt: ratio(t?.peakMeanLatencyMs, rtt),
        quicProcessedShare: share(q),
        quicFailed: q?.failed ?? null,
        quicPeakLatencyOverRtt: ratio(q?.peakMeanLatencyMs, rtt),
        quicPeakBacklog: q?.peakActive ?? null,
      };
    }
    case 'sockets': {
      const tcp = byName(runs, 'tcp');
      const quic = byName(runs, 'quic');
      const window = windowOf(tcp);
      const tcpLast = tcp === undefined ? null : lastSecondsRate(tcp, window);
      const quicLast = quic === undefined ? null : lastSecondsRate(quic, window);
      const bound = littleBound(fig(tcp)?.sessions ?? 0, rtt);
      return {
        rttMs: rtt,
        windowSeconds: window,
        tcpLast5sPerSec: tcpLast,
        quicLast5sPerSec: quicLast,
        quicOverTcpLast5s: ratio(quicLast, tcpLast),
        tcpLittleBoundPerSec: bound,
        tcpPlateauOverBound: ratio(tcpLast, bound),
        quicFailed: fig(quic)?.failed ?? null,
      };
    }
    case 'fair':
      return fairFigures(runs);
    case 'loss': {
      const drops = (name: string, i: 0 | 1): number | null => byName(runs, name)?.path.randomDrops?.[i] ?? null;
      return { ...fairFigures(runs), tcpDroppedUp: drops('tcp', 0), tcpDroppedDown: drops('tcp', 1), quicDroppedUp: drops('quic', 0), quicDroppedDown: drops('quic', 1) };
    }
    case 'connect': {
      const out: Figures = { rttMs: rtt };
      for (const [key, name] of [['tcp', 'tcp'], ['quicStream', 'quic-stream'], ['quic0rtt', 'quic-0rtt']] as const) {
        const f = fig(byName(runs, name));
        out[`${key}P50Ms`] = f?.p50Ms ?? null;
        out[`${key}P99Ms`] = f?.p99Ms ?? null;
        out[`${key}P50Rtts`] = ratio(f?.p50Ms, rtt);
        out[`${key}P99Rtts`] = ratio(f?.p99Ms, rtt);
        out[`${key}Failed`] = f?.failed ?? null;
      }
      const zero = byName(runs, 'quic-0rtt')?.result.info;
      out.quic0rttResumedShare = ratio(typeof zero?.resumed === 'number' ? zero.resumed : null, typeof zero?.connections === 'number' ? zero.connections : null);
      return out;
    }
    case 'direct': {
      const a = fig(byName(runs, 'pg'));
      const b = fig(byName(runs, 'pg-prepare'));
      return { pgP50Ms: a?.p50Ms ?? null, pgPrepareP50Ms: b?.p50Ms ?? null, pgProcessedShare: share(a), pgPrepareProcessedShare: share(b) };
    }
  }
}

/** The figures an answer rests on (flagged when their rounds differ by more than 15%). */
export const KEY_FIGURES: Readonly<Record<ScenarioName, readonly string[]>> = {
  capacity: ['tcpQps', 'quicQps'],
  original: ['quicPeakLatencyOverRtt', 'tcpPlateauOverBound', 'quicProcessedShare'],
  sockets: ['quicOverTcpLast5s', 'tcpPlateauOverBound'],
  fair: ['p99QuicOverTcp'],
  loss: ['p99QuicOverTcp'],
  connect: ['tcpP50Rtts', 'quicStreamP50Rtts', 'quic0rttP50Rtts'],
  direct: ['pgP50Ms'],
};

const n = (v: number | null | undefined, digits = 0): string => (v === null || v === undefined ? 'n/a' : v.toFixed(digits));
const pct = (v: number | null | undefined): string => (v === null || v === undefined ? 'n/a' : `${(v * 100).toFixed(0)}%`);

/** One sentence that answers the scenario's question from the medians over the rounds. */
export function answerOf(plan: ScenarioPlan, f: Readonly<Record<string, RoundStat>>): string {
  const m = (key: string): number | null => f[key]?.median ?? null;
  const [tcp, quic] = [plan.variants[0]?.label ?? 'TCP', plan.variants[1]?.label ?? 'QUIC'];
  switch (plan.name) {
    case 'capacity':
      return `The whole stack sustains ${n(m('tcpQps'))} q/s over TCP + TLS and ${n(m('quicQps'))} q/s over QUIC (closed loop, no added delay), against ${n(m('postgresQps'))} q/s straight to Postgres; WAN ramps scaled to it peak at ${PEAK_SHARE * 100}% of the lower, ${n(PEAK_SHARE * Math.min(m('tcpQps') ?? 0, m('quicQps') ?? 0))} q/s (unless --peak or --seed-scale sets their scale).`;
    case 'original': {
      // A query costs plan.roundTripsPerQuery RTTs at best (two with prepare + execute).
      const kept = (m('quicProcessedShare') ?? 0) >= 0.99 && (m('quicFailed') ?? 1) === 0 && (m('quicPeakLatencyOverRtt') ?? Infinity) <= 1.3 * plan.roundTripsPerQuery;
      const wall = (m('tcpPlateauOverBound') ?? 0) >= 0.85 || (m('tcpProcessedShare') ?? 1) < 0.99;
      const verdict = kept && wall ? 'Yes' : kept ? 'Not visibly: TCP kept up too' : 'Not here: QUIC did not keep up';
      return `${verdict}. ${tcp} plateaued at ${n(m('tcpPlateauPerSec'))} q/s, ${pct(m('tcpPlateauOverBound'))} of its Little's-law wall of ${n(m('tcpLittleBoundPerSec'))} q/s, with a backlog of up to ${n(m('tcpPeakBacklog'))} queries; ${quic} answered ${pct(m('quicProcessedShare'))} of the queries with a mean latency at the peak of ${n(m('quicPeakLatencyOverRtt'), 2)} x the measured RTT of ${n(m('rttMs'), 1)} ms.`;
    }
    case 'sockets':
      return `With equal sockets, QUIC answered ${n(m('quicOverTcpLast5s'), 2)} x what TCP did over the last ${n(m('windowSeconds'))} s of the ramp (${n(m('quicLast5sPerSec'))} vs ${n(m('tcpLast5sPerSec'))} q/s); TCP plateaued at ${pct(m('tcpPlateauOverBound'))} of connections / RTT = ${n(m('tcpLittleBoundPerSec'))} q/s.`;
    case 'fair':
      return `With equal sessions and headroom, QUIC's p99 latency was ${n(m('p99QuicOverTcp'), 2)} x TCP's (${n(m('quicP99Ms'), 1)} vs ${n(m('tcpP99Ms'), 1)} ms); QUIC held ${n(m('quicFds'))} client descriptors vs ${n(m('tcpFds'))} and opened its sessions in ${n(m('quicConnectMs'))} vs ${n(m('tcpConnectMs'))} ms.`;
    case 'loss':
      return `With ${n((plan.wan?.lossRate ?? 0) * 100, 1)}% of packets lost in each direction (TCP recovering end to end over the full RTT), QUIC's p99 latency was ${n(m('p99QuicOverTcp'), 2)} x TCP's (${n(m('quicP99Ms'), 1)} vs ${n(m('tcpP99Ms'), 1)} ms).`;
    case 'connect':
      return `A new session per query, time to the first row (p50 / p99, in measured RTTs of ${n(m('rttMs'), 1)} ms): TCP + TLS + SCRAM ${n(m('tcpP50Rtts'), 1)} / ${n(m('tcpP99Rtts'), 1)}, a new QUIC stream ${n(m('quicStreamP50Rtts'), 1)} / ${n(m('quicStreamP99Rtts'), 1)}, a 0-RTT QUIC connection ${n(m('quic0rttP50Rtts'), 1)} / ${n(m('quic0rttP99Rtts'), 1)} (${pct(m('quic0rttResumedShare'))} resumed).`;
    case 'direct':
      return `Sanity: straight to Postgres the harness answered ${pct(m('pgProcessedShare'))} and ${pct(m('pgPrepareProcessedShare'))} of the queries, p50 ${n(m('pgP50Ms'), 2)} ms (one round trip) vs ${n(m('pgPrepareP50Ms'), 2)} ms (prepare + execute).`;
  }
}

const list = (pick: (p: ProcessName) => number | null): string => PROCESS_CPU.map(({ process: p }) => `${p} ${n(pick(p))}`).join(', ');

function busyText(top: StepFigures, cores: number): string {
  if (top.machineMsPerSec === null) return '';
  const ours = PROCESS_CPU.reduce((t, p) => t + (top.msPerSec[p.process] ?? 0), 0);
  return ` The machine was ${(top.machineMsPerSec / (10 * cores)).toFixed(0)}% busy (${cores} cores; ${n(top.machineMsPerSec - ours)} ms/s of it outside these four processes).`;
}

// Where the CPU went, in words: per variant, CPU per query of each process at the busiest step, the fixed cost at the
// probe's low rate, and how busy the machine was, so a latency reads as the network's or as a starved CPU's.
export function cpuNotes(runs: readonly VariantRun[]): string[] {
  const cores = cpus().length;
  return runs.flatMap((run) => {
    const f = variantFigures(run);
    const top = busiestStep(f);
    if (top === null) return [];
    const probe = f.steps.find((s) => s.label === 'probe');
    const fixed = probe === undefined ? '' : ` At the probe's ${n(probe.qps)} q/s, CPU ms per second: ${list((p) => probe.msPerSec[p])} (mostly fixed cost).`;
    const pooler = f.cpuFit.pooler;
    const fit = pooler === null ? '' : ` Straight-line fit over the run: the pooler costs ${n(pooler.fixedMsPerSec)} ms/s plus ${n(pooler.usPerQuery)} µs per query.`;
    return [`${run.variant}: at ${n(top.qps)} q/s (its busiest step) CPU µs per query: ${list((p) => top.usPerQuery[p])}.${busyText(top, cores)}${fixed}${fit}`];
  });
}
