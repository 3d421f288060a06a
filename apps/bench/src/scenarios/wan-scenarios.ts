// The WAN scenarios of the article and the fairer versions of it: `original`, `sockets`, `fair` and
// `loss`. Each variant gets a fresh pooler process and WAN emulator process (stack/quicpool-plans),
// and runs its load in its own process; the first variant (TCP) is the baseline of the ratios.
import { netnsUnavailableReason } from '../netns/lossy-netns.js';
import { defineLoadScenario } from './load-scenario.js';
import {
  ARTICLE_RAMP,
  FAIR_SESSIONS,
  LOSS_RATE,
  ORIGINAL_EXACT_RAMP,
  ORIGINAL_EXACT_TICK_MS,
  ORIGINAL_QUIC_CONNECTIONS,
  ORIGINAL_QUIC_STREAMS_PER_CONNECTION,
  ORIGINAL_TCP_SESSIONS,
  QUICK_ARTICLE_RAMP,
  QUICK_FAIR_SESSION_SCALE,
  QUICK_ORIGINAL_EXACT_RAMP,
  SOCKETS_TCP_CONNECTIONS,
  WAN_ONE_WAY_DELAY_MS,
} from './presets.js';
import type { PathSpec } from './stack/quicpool-plans.js';
import { quicPlan, tcpPlan } from './stack/quicpool-plans.js';
import type { ScenarioContext } from './types.js';
import { byName, figuresOf, fmt, lastSecondsRate, littleBound, ratio } from './wan-figures.js';

const scale = (ctx: ScenarioContext, n: number, exponent = 1): number => Math.max(1, Math.round(n * (ctx.overrides?.sessionScale ?? 1) ** exponent));
/** fair/loss in quick mode: a quarter of the sessions (unless a test sets its own scale). */
const fairCtx = (ctx: ScenarioContext): ScenarioContext =>
  ctx.quick && ctx.overrides?.sessionScale === undefined ? { ...ctx, overrides: { ...ctx.overrides, sessionScale: QUICK_FAIR_SESSION_SCALE } } : ctx;
const delay = (ctx: ScenarioContext): number => ctx.overrides?.delayMs ?? WAN_ONE_WAY_DELAY_MS;
const wan = (ctx: ScenarioContext): PathSpec => ({ kind: 'wan', delayMs: delay(ctx) });
const lossy = (ctx: ScenarioContext): PathSpec => ({ kind: 'lossy', delayMs: delay(ctx), lossRate: LOSS_RATE });
/** QUIC's 50 x 40, scaled by the square root of the session scale on both axes (tests). */
const quicShape = (ctx: ScenarioContext): { connections: number; streams: number } => ({
  connections: scale(ctx, ORIGINAL_QUIC_CONNECTIONS, 0.5),
  streams: scale(ctx, ORIGINAL_QUIC_STREAMS_PER_CONNECTION, 0.5),
});
const needsScript = (ctx: ScenarioContext): string | null => (ctx.script === null ? 'the built bench program (dist/bin/bench.js) to start the pooler and WAN emulator processes' : null);

export const originalScenario = defineLoadScenario({
  name: 'original',
  title: 'Original: TCP 500 sessions + TLS vs QUIC 50 x 40 streams',
  description: (ctx) => {
    const q = quicShape(ctx);
    const how = ctx.originalExact
      ? 'As the original code really ran (--original-exact): 0 -> 10,000 q/s in 500 ms ticks, every query prepared then executed (two round trips).'
      : 'As the article describes it: one simple query per round trip (what node-postgres does).';
    return `TCP: ${scale(ctx, ORIGINAL_TCP_SESSIONS)} node-postgres sessions with TLS through quicpool; QUIC: ${q.connections} connections x ${q.streams} streams through quicpool; ${2 * delay(ctx)} ms RTT by the WAN emulator. ${how}`;
  },
  variants: (ctx) => {
    const q = quicShape(ctx);
    return [
      tcpPlan({ name: 'tcp', sessions: scale(ctx, ORIGINAL_TCP_SESSIONS), tls: true, path: wan(ctx), prepare: ctx.originalExact }),
      quicPlan({ name: 'quic', connections: q.connections, streamsPerConnection: q.streams, path: wan(ctx), prepare: ctx.originalExact }),
    ];
  },
  ramp: ARTICLE_RAMP,
  quickRamp: QUICK_ARTICLE_RAMP,
  rampFor: (ctx) => (ctx.originalExact ? (ctx.quick ? QUICK_ORIGINAL_EXACT_RAMP : ORIGINAL_EXACT_RAMP) : ctx.quick ? QUICK_ARTICLE_RAMP : ARTICLE_RAMP),
  tickMs: (ctx) => (ctx.originalExact ? ORIGINAL_EXACT_TICK_MS : 10),
  unavailable: needsScript,
  summarize: (runs, ctx) => {
    const tcp = byName(runs, 'tcp');
    const quic = byName(runs, 'quic');
    const t = figuresOf(tcp);
    const q = figuresOf(quic);
    const rtt = quic?.rttMs ?? tcp?.rttMs ?? null;
    const trips = ctx.originalExact ? 2 : 1;
    const tcpBound = littleBound(tcp?.sessions ?? 0, rtt, trips);
    const extra = {
      roundTripsPerQuery: trips,
      tcpLittleBoundPerSec: tcpBound,
      quicProcessedShare: q === null || q.offered === 0 ? null : Number((q.processed / q.offered).toFixed(4)),
      quicPeakLatencyOverRtt: ratio(q?.peakMeanLatencyMs ?? null, rtt),
      tcpPeakLatencyOverRtt: ratio(t?.peakMeanLatencyMs ?? null, rtt),
    };
    const notes = [
      `TCP's ceiling by Little's law: ${tcp?.sessions ?? 0} sessions / (${trips} x ${fmt(rtt)} ms) = ${fmt(tcpBound, 0)} q/s; the ramp peaks at ${runs[0]?.rows.length ? Math.max(...runs[0].rows.map((r) => r.offered_per_sec ?? 0)) : 0} q/s offered.`,
      t === null
        ? 'TCP did not run.'
        : t.failed === 0 && t.processed >= 0.99 * t.offered
          ? ctx.originalExact
            ? `TCP-${tcp?.sessions} kept up (${t.processed}/${t.offered} processed, none failed) at two round trips per query: this ramp stayed below its ceiling.`
            : `TCP-${tcp?.sessions} kept up (${t.processed}/${t.offered} processed, none failed): with one round trip per query its ceiling is far above this ramp. The article's TCP plateau (~4,700 q/s) came from two round trips per query (prepare + execute): rerun with --original-exact.`
          : `TCP-${tcp?.sessions} fell behind: ${t.processed}/${t.offered} processed, ${t.failed} failed, peak ${t.peakProcessedPerSec} q/s (Little's-law ceiling ${fmt(tcpBound, 0)} q/s; a peak well below it means the machine, not the sessions, was the limit: compare with capacity).`,
      q === null ? 'QUIC did not run.' : `QUIC: ${q.processed}/${q.offered} processed (${fmt(extra.quicProcessedShare === null ? null : extra.quicProcessedShare * 100)}%), ${q.failed} failed, mean latency at the peak ${fmt(q.peakMeanLatencyMs)} ms = ${fmt(extra.quicPeakLatencyOverRtt, 2)} x RTT, client RSS peak ${q.peakRssMB} MB.`,
    ];
    return { extra, notes };
  },
});

export const socketsScenario = defineLoadScenario({
  name: 'sockets',
  title: 'Sockets: TCP 50 connections vs QUIC 50 x 40 streams',
  description: (ctx) => {
    const q = quicShape(ctx);
    return `Equal socket counts: ${scale(ctx, SOCKETS_TCP_CONNECTIONS, 0.5)} TCP connections (TLS) vs ${q.connections} QUIC connections x ${q.streams} streams, ${2 * delay(ctx)} ms RTT. TCP can have at most one query per connection in flight, so it must plateau near connections / RTT (Little's law); QUIC multiplexes ${q.streams} sessions per connection.`;
  },
  variants: (ctx) => {
    const q = quicShape(ctx);
    return [
      tcpPlan({ name: 'tcp', sessions: scale(ctx, SOCKETS_TCP_CONNECTIONS, 0.5), tls: true, path: wan(ctx) }),
      quicPlan({ name: 'quic', connections: q.connections, streamsPerConnection: q.streams, path: wan(ctx) }),
    ];
  },
  ramp: ARTICLE_RAMP,
  quickRamp: QUICK_ARTICLE_RAMP,
  unavailable: needsScript,
  summarize: (runs, _ctx, ramp) => {
    const tcp = byName(runs, 'tcp');
    const quic = byName(runs, 'quic');
    const rtt = tcp?.rttMs ?? quic?.rttMs ?? null;
    // The last 5 s of the ramp; shorter ramps (quick mode, tests) use their second half.
    const window = Math.max(1, Math.min(5, Math.floor(ramp.durationMs / 2000)));
    const tcpLast5 = tcp === undefined ? null : lastSecondsRate(tcp, window);
    const quicLast5 = quic === undefined ? null : lastSecondsRate(quic, window);
    const bound = littleBound(tcp?.sessions ?? 0, rtt);
    const extra = {
      windowSeconds: window,
      tcpLast5sPerSec: tcpLast5,
      quicLast5sPerSec: quicLast5,
      quicOverTcpLast5s: ratio(quicLast5, tcpLast5),
      tcpLittleBoundPerSec: bound,
      tcpPlateauOverBound: ratio(tcpLast5, bound),
    };
    const notes = [
      `Last ${window} s of the ramp: TCP ${fmt(tcpLast5)} q/s, QUIC ${fmt(quicLast5)} q/s (QUIC / TCP = ${fmt(extra.quicOverTcpLast5s, 2)}x; target >= 2x).`,
      `Little's law: ${tcp?.sessions ?? 0} connections / ${fmt(rtt)} ms measured RTT = ${fmt(bound, 0)} q/s; TCP's plateau is ${fmt(extra.tcpPlateauOverBound === null ? null : extra.tcpPlateauOverBound * 100)}% of it (target: within 15%). A plateau below the bound means a query costs more than one RTT (pooler, Postgres and the shared CPU add service time).`,
    ];
    return { extra, notes };
  },
});

function fairSummary(runs: Parameters<NonNullable<Parameters<typeof defineLoadScenario>[0]['summarize']>>[0]): { extra: Record<string, number | string | boolean | null>; notes: string[] } {
  const tcp = byName(runs, 'tcp');
  const quic = byName(runs, 'quic');
  const t = figuresOf(tcp);
  const q = figuresOf(quic);
  const extra = {
    tcpFds: tcp?.fds ?? null,
    quicFds: quic?.fds ?? null,
    tcpConnectMs: t?.openMs ?? null,
    quicConnectMs: q?.openMs ?? null,
    tcpPeakRssMB: t?.peakRssMB ?? null,
    quicPeakRssMB: q?.peakRssMB ?? null,
    p99QuicOverTcp: ratio(q?.p99Ms ?? null, t?.p99Ms ?? null),
    fdLimit: typeof tcp?.info?.fdSoftLimit === 'number' ? tcp.info.fdSoftLimit : null,
    tcpPoolerFds: typeof tcp?.info?.poolerFds === 'number' ? tcp.info.poolerFds : null,
    quicPoolerFds: typeof quic?.info?.poolerFds === 'number' ? quic.info.poolerFds : null,
  };
  const notes = [
    `Equal sessions (${tcp?.sessions ?? 0} vs ${quic?.sessions ?? 0}): client file descriptors ${fmt(extra.tcpFds, 0)} (TCP) vs ${fmt(extra.quicFds, 0)} (QUIC); connect time for every session ${fmt(extra.tcpConnectMs, 0)} ms vs ${fmt(extra.quicConnectMs, 0)} ms; client RSS peak ${fmt(extra.tcpPeakRssMB)} MB vs ${fmt(extra.quicPeakRssMB)} MB; p99 ${fmt(t?.p99Ms ?? null, 2)} ms vs ${fmt(q?.p99Ms ?? null, 2)} ms.`,
    `TCP needs one descriptor per session in the client and again in the pooler (pooler descriptors: ${fmt(extra.tcpPoolerFds, 0)} for TCP vs ${fmt(extra.quicPoolerFds, 0)} for QUIC); the limit here is ${fmt(extra.fdLimit, 0)} (Node raises its soft limit to the hard one; a hard limit of 1,024 would stop TCP near 1,000 sessions). With equal sessions both sides can keep the same number of queries in flight, so throughput differences here are not multiplexing but per-session cost.`,
  ];
  return { extra, notes };
}

export const fairScenario = defineLoadScenario({
  name: 'fair',
  title: 'Fair: equal sessions, TCP connections vs QUIC streams (2,000 each; quick: 500)',
  description: (outer) => {
    const ctx = fairCtx(outer);
    const q = quicShape(ctx);
    return `Equal session counts: ${scale(ctx, FAIR_SESSIONS)} TCP sessions (TLS, one connection each) vs ${q.connections * q.streams} QUIC streams (${q.connections} x ${q.streams}), ${2 * delay(ctx)} ms RTT. Separates what multiplexing buys (more sessions) from what QUIC itself buys (fds, memory, connect time, tail latency).`;
  },
  variants: (outer) => {
    const ctx = fairCtx(outer);
    const q = quicShape(ctx);
    return [
      tcpPlan({ name: 'tcp', sessions: scale(ctx, FAIR_SESSIONS), tls: true, path: wan(ctx) }),
      quicPlan({ name: 'quic', connections: q.connections, streamsPerConnection: q.streams, path: wan(ctx) }),
    ];
  },
  ramp: ARTICLE_RAMP,
  quickRamp: QUICK_ARTICLE_RAMP,
  unavailable: needsScript,
  summarize: (runs) => fairSummary(runs),
});

export const lossScenario = defineLoadScenario({
  name: 'loss',
  title: 'Loss: the fair pair with 1% real packet loss per direction',
  description: (outer) => {
    const ctx = fairCtx(outer);
    const q = quicShape(ctx);
    return `${scale(ctx, FAIR_SESSIONS)} TCP sessions (TLS) vs ${q.connections} x ${q.streams} QUIC streams, ${2 * delay(ctx)} ms RTT, ${LOSS_RATE * 100}% of packets dropped in each direction by the kernel (iptables statistic in a network namespace), for TCP and UDP alike. A lost TCP segment stalls its session until retransmitted; a lost QUIC packet stalls only the streams whose data it carried.`;
  },
  variants: (outer) => {
    const ctx = fairCtx(outer);
    const q = quicShape(ctx);
    return [
      tcpPlan({ name: 'tcp', sessions: scale(ctx, FAIR_SESSIONS), tls: true, path: lossy(ctx) }),
      quicPlan({ name: 'quic', connections: q.connections, streamsPerConnection: q.streams, path: lossy(ctx) }),
    ];
  },
  ramp: ARTICLE_RAMP,
  quickRamp: QUICK_ARTICLE_RAMP,
  unavailable: (ctx) => needsScript(ctx) ?? (netnsUnavailableReason() === null ? null : `real packet loss: ${netnsUnavailableReason() ?? ''}`),
  summarize: (runs) => {
    const base = fairSummary(runs);
    const tcp = byName(runs, 'tcp');
    const quic = byName(runs, 'quic');
    const method = typeof tcp?.info?.lossMethod === 'string' ? tcp.info.lossMethod : null;
    const extra = {
      ...base.extra,
      lossMethod: method,
      tcpDroppedUp: (tcp?.info?.droppedUp as number | undefined) ?? null,
      tcpDroppedDown: (tcp?.info?.droppedDown as number | undefined) ?? null,
      quicDroppedUp: (quic?.info?.droppedUp as number | undefined) ?? null,
      quicDroppedDown: (quic?.info?.droppedDown as number | undefined) ?? null,
    };
    const notes = [
      `p99 QUIC / TCP = ${fmt(ratio(figuresOf(quic)?.p99Ms ?? null, figuresOf(tcp)?.p99Ms ?? null), 3)} (target <= 0.5).`,
      `Loss method: ${method ?? 'n/a'}. Packets dropped (up/down): TCP ${fmt(extra.tcpDroppedUp, 0)}/${fmt(extra.tcpDroppedDown, 0)}, QUIC ${fmt(extra.quicDroppedUp, 0)}/${fmt(extra.quicDroppedDown, 0)}.`,
      "Caveat: this kernel has no netem, so the delay comes from the user-space WAN emulator, which terminates TCP. TCP's loss therefore happens on the client-emulator leg whose own RTT is ~0.1 ms: its retransmission timers (RTO floor 200 ms, tail-loss probe) run on that short leg, which favours TCP compared with loss on a real 30 ms path. QUIC's datagrams are relayed one by one, so its loss recovery sees the full RTT.",
      ...base.notes,
    ];
    return { extra, notes };
  },
});
