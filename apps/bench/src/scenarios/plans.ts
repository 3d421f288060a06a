// What each scenario runs, scaled to the machine (docs/benchmark.md): every WAN ramp peaks at 70% of the lower measured
// capacity (latency the network's, not a starved CPU's), and sessions put TCP's Little's-law wall at half that peak.
import type { Ramp } from '../load/schedule.js';
import type { BenchOptions } from './run-bench.js';
import type { LoadSpec, ScenarioName, ScenarioPlan, VariantPlan } from './types.js';

/** The bench's options a plan depends on (their meanings: benchOptionsOf). */
export type BenchSettings = Pick<BenchOptions, 'quick' | 'originalExact' | 'seedScale' | 'delayMs' | 'rampSeconds' | 'probeSeconds' | 'lossRate'
  | 'steadyRate' | 'pgbouncer'>;

/** The load every WAN scenario is scaled to: the ramps' peak offered rate, and the closed-loop capacity per transport when measured (q/s). */
export type Scale = Readonly<{ peak: number; source: 'capacity' | 'given' | 'seed'; capacity: Readonly<{ tcp: number; quic: number }> | null }>;

/** Share of the lower capacity the WAN ramps peak at. */
export const PEAK_SHARE = 0.7;
/** TCP's Little's-law wall as a share of the peak. */
const WALL_SHARE = 0.5;

export const seedScale: Scale = { peak: 5_000, source: 'seed', capacity: null };

export function scaleFromCapacity(tcp: number, quic: number): Scale {
  return { peak: Math.max(10, Math.round(PEAK_SHARE * Math.min(tcp, quic))), source: 'capacity', capacity: { tcp, quic } };
}

/** The seed's shape: TCP N sessions vs QUIC 4N streams as connections x streams in 50 : 40. */
export function sessionShape(s: BenchSettings, scale: Scale): { tcp: number; connections: number; streams: number } {
  if (s.seedScale) return { tcp: 500, connections: 50, streams: 40 };
  const trips = s.originalExact ? 2 : 1;
  const rttSeconds = (2 * s.delayMs) / 1000;
  const tcp = Math.max(2, Math.round(WALL_SHARE * scale.peak * trips * rttSeconds));
  const connections = Math.max(1, Math.round(50 * Math.sqrt(tcp / 500)));
  return { tcp, connections, streams: Math.max(1, Math.round((4 * tcp) / connections)) };
}

const timeoutMs = (s: BenchSettings): number => (s.quick ? 5_000 : 10_000);
const probe = (s: BenchSettings, peak: number): { rate: number; seconds: number } | null => (s.probeSeconds <= 0 ? null : { rate: Math.max(2, Math.min(20, Math.round(peak / 50))), seconds: s.probeSeconds });
/** Quick mode: at most this long, and never longer than the ramps. */
const short = (s: BenchSettings, seconds: number): number => Math.min(seconds, s.rampSeconds);

function wanRamp(s: BenchSettings, scale: Scale): { ramp: Ramp; tickMs: number } {
  // --steady: the same rate from start to end (CPU per query at a known load).
  if (s.steadyRate !== null) return { ramp: { startRate: s.steadyRate, endRate: s.steadyRate, durationMs: s.rampSeconds * 1000 }, tickMs: 10 };
  const seconds = s.seedScale ? 30 : s.rampSeconds;
  // The original code's real load went from 0 to ~10,000 q/s (a bracket slip; seeds/README.md).
  if (s.originalExact) return { ramp: { startRate: 0, endRate: s.seedScale ? 10_000 : scale.peak, durationMs: seconds * 1000 }, tickMs: 500 };
  return { ramp: { startRate: Math.round(scale.peak / 50), endRate: scale.peak, durationMs: seconds * 1000 }, tickMs: 10 };
}

function scalingText(s: BenchSettings, scale: Scale, tcp: number, trips: number): string {
  const wall = Math.round((tcp * 1000) / (trips * 2 * s.delayMs));
  const how: Record<Scale['source'], string> = {
    seed: 'Unscaled: the original benchmark\'s numbers (--seed-scale).',
    given: `Peak ${scale.peak} q/s as given (--peak).`,
    capacity: `Peak ${scale.peak} q/s = ${PEAK_SHARE * 100}% of the lower capacity (TCP ${scale.capacity?.tcp ?? '?'}, QUIC ${scale.capacity?.quic ?? '?'} q/s, closed loop, no added delay).`,
  };
  return `${how[scale.source]} TCP's Little's-law wall at the configured RTT: ${tcp} / (${trips} x ${2 * s.delayMs} ms) = ${wall} q/s.`;
}

const tcpVariant = (sessions: number, prepare: boolean): VariantPlan => ({ name: 'tcp', label: `TCP + TLS, ${sessions} sessions`, client: { kind: 'pg', sessions, tls: true, prepare }, route: 'pooler' });
/** The TCP variant's clients through PgBouncer instead of quicpool: what the C pooler costs per query on the same path. */
const pgbouncerVariant = (sessions: number, prepare: boolean): VariantPlan => ({ ...tcpVariant(sessions, prepare), name: 'pgbouncer', label: `PgBouncer, TCP + TLS, ${sessions} sessions`, route: 'pgbouncer' });
const quicVariant = (connections: number, streams: number, prepare: boolean): VariantPlan =>
  ({ name: 'quic', label: `QUIC, ${connections} connections x ${streams} streams`, client: { kind: 'quic', connections, streams, prepare }, route: 'pooler' });

function wanPlan(name: 'original' | 'sockets' | 'fair' | 'loss', s: BenchSettings, scale: Scale): ScenarioPlan {
  const shape = sessionShape(s, scale);
  const exact = name === 'original' && s.originalExact;
  const trips = exact ? 2 : 1;
  const { ramp, tickMs } = name === 'original' ? wanRamp(s, scale) : wanRamp({ ...s, originalExact: false }, scale);
  const load: LoadSpec = { kind: 'open', probe: probe(s, scale.peak), ramp, tickMs, timeoutMs: timeoutMs(s) };
  const rtt = `${2 * s.delayMs} ms RTT`;
  const common = { name, sanity: false, load, roundTripsPerQuery: trips, wan: { delayMs: s.delayMs, lossRate: name === 'loss' ? s.lossRate : 0 } };
  // Equal sockets, as in the seed (TCP 50 vs QUIC 50 x 40): TCP's wall sits well below the peak.
  const sockets = shape.connections;
  switch (name) {
    case 'original':
      return {
        ...common,
        title: `Original: TCP ${shape.tcp} sessions + TLS vs QUIC ${shape.connections} x ${shape.streams} streams`,
        description: `The article's set-up at this machine's scale: TCP sessions : QUIC streams = 1 : 4 as 500 : 50 x 40, TLS on TCP, SCRAM per session, ${rtt}, ramp ${ramp.startRate} -> ${ramp.endRate} q/s over ${ramp.durationMs / 1000} s${exact ? ' in 500 ms steps, every query prepared then executed (two round trips, --original-exact)' : ', one simple query per round trip'}. ${scalingText(s, scale, shape.tcp, trips)}`,
        variants: [tcpVariant(shape.tcp, exact), quicVariant(shape.connections, shape.streams, exact), ...(s.pgbouncer ? [pgbouncerVariant(shape.tcp, exact)] : [])],
      };
    case 'sockets':
      return {
        ...common,
        title: `Sockets: TCP ${sockets} connections vs QUIC ${sockets} x ${shape.streams} streams`,
        description: `Equal socket counts as in the seed (TCP gets as many connections as the original's QUIC side has), ${rtt}: a TCP connection carries one query at a time, so TCP must plateau near ${sockets} / RTT (Little's law); each QUIC connection multiplexes ${shape.streams} sessions. ${scalingText(s, scale, sockets, 1)}`,
        variants: [tcpVariant(sockets, false), quicVariant(sockets, shape.streams, false)],
      };
    case 'fair':
    case 'loss': {
      const sessions = shape.connections * shape.streams;
      const lossText = name === 'loss' ? `, ${s.lossRate * 100}% of packets dropped at random in each direction by the path (the same seed for both), so TCP's own loss recovery runs over the full RTT` : '';
      return {
        ...common,
        title: `${name === 'loss' ? 'Loss' : 'Fair'}: equal sessions, TCP ${sessions} vs QUIC ${shape.connections} x ${shape.streams}${name === 'loss' ? `, ${s.lossRate * 100}% loss` : ''}`,
        description: `Equal session counts with headroom (TCP's wall ${Math.round((sessions * 1000) / (2 * s.delayMs))} q/s, twice the peak), ${rtt}${lossText}: what QUIC itself buys, apart from multiplexing (descriptors, connect time, tail latency). ${scalingText(s, scale, shape.tcp, 1)}`,
        variants: [tcpVariant(sessions, false), quicVariant(shape.connections, shape.streams, false)],
      };
    }
  }
}

function capacityPlan(s: BenchSettings): ScenarioPlan {
  const warmup = s.quick ? 0.5 : 1;
  const steps = s.quick ? [{ workers: 32, seconds: short(s, 2) }] : [{ workers: 16, seconds: 2.5 }, { workers: 48, seconds: 2.5 }];
  const most = Math.max(...steps.map((x) => x.workers));
  return {
    name: 'capacity',
    title: 'Capacity: the whole stack, closed loop, no added delay',
    description: `Each variant's sessions issue queries back to back (${steps.map((x) => `${x.workers} sessions for ${x.seconds} s`).join(', then ')}, after ${warmup} s of warm-up) over the same path, daemon and clients as the WAN scenarios, with no added delay; the best step is the capacity. "postgres" is the same client straight to Postgres (no daemon, no path). The WAN ramps are scaled to the lower of TCP's and QUIC's.`,
    sanity: true,
    wan: { delayMs: 0, lossRate: 0 },
    variants: [
      tcpVariant(most, false),
      quicVariant(2, Math.ceil(most / 2), false),
      { name: 'postgres', label: `straight to Postgres, ${most} sessions`, client: { kind: 'pg', sessions: most, tls: false, prepare: false }, route: 'postgres' },
    ],
    load: { kind: 'closed', steps, warmupSeconds: warmup, timeoutMs: timeoutMs(s) },
    roundTripsPerQuery: 1,
  };
}

function connectPlan(s: BenchSettings): ScenarioPlan {
  const rate = s.quick ? 10 : 20;
  const seconds = s.quick ? short(s, 3) : 8;
  return {
    name: 'connect',
    title: 'Connect per request: a new session for every query',
    description: `As a serverless function does: every query opens its own session, gets its row, closes. TCP + TLS (after SSLRequest) + SCRAM per query, vs a new QUIC stream (startup + SCRAM) on one open connection, vs a new QUIC connection resumed with a session ticket (0-RTT) per query; ${rate} queries/s for ${seconds} s, ${2 * s.delayMs} ms RTT. Latency here is the time to the first row.`,
    sanity: false,
    wan: { delayMs: s.delayMs, lossRate: 0 },
    variants: [
      { name: 'tcp', label: 'TCP + TLS + SCRAM per query', client: { kind: 'connect-tcp' }, route: 'pooler' },
      { name: 'quic-stream', label: 'new QUIC stream per query', client: { kind: 'connect-stream' }, route: 'pooler' },
      { name: 'quic-0rtt', label: 'new 0-RTT QUIC connection per query', client: { kind: 'connect-0rtt' }, route: 'pooler' },
    ],
    load: { kind: 'open', probe: null, ramp: { startRate: rate, endRate: rate, durationMs: seconds * 1000 }, tickMs: 10, timeoutMs: timeoutMs(s) },
    roundTripsPerQuery: 1,
  };
}

function directPlan(s: BenchSettings): ScenarioPlan {
  const ramp = s.quick ? { startRate: 50, endRate: 500, durationMs: short(s, 3) * 1000 } : { startRate: 100, endRate: 1_000, durationMs: 6_000 };
  const pgVariant = (name: string, prepare: boolean): VariantPlan => ({ name, label: `node-postgres, 10 sessions${prepare ? ', prepare + execute' : ''}`, client: { kind: 'pg', sessions: 10, tls: false, prepare }, route: 'postgres' });
  return {
    name: 'direct',
    title: 'Direct to Postgres (sanity)',
    description: `node-postgres straight to Postgres on the host, 10 sessions, no daemon, no path: one round trip per query vs prepare + execute (two); ramp ${ramp.startRate} -> ${ramp.endRate} q/s over ${ramp.durationMs / 1000} s. A check of the harness itself.`,
    sanity: true,
    wan: null,
    variants: [pgVariant('pg', false), pgVariant('pg-prepare', true)],
    load: { kind: 'open', probe: probe(s, 1_000), ramp, tickMs: 10, timeoutMs: timeoutMs(s) },
    roundTripsPerQuery: 1,
  };
}

export const SCENARIO_NAMES: readonly ScenarioName[] = ['capacity', 'original', 'sockets', 'fair', 'loss', 'connect', 'direct'];

/** The plan of a scenario that needs no scale (capacity, connect, direct) or the scaled WAN ones. */
export function planFor(name: ScenarioName, s: BenchSettings, scale: Scale): ScenarioPlan {
  if (name === 'capacity') return capacityPlan(s);
  if (name === 'connect') return connectPlan(s);
  if (name === 'direct') return directPlan(s);
  return wanPlan(name, s, scale);
}
