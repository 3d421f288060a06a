// The shapes every scenario shares. A plan (client variants, path, load) runs R rounds, each variant once a round, one after
// the other (never at once: they would share the 2 cores), each in fresh processes: its own path, daemon and client process.
import type { Ramp } from '../load/schedule.js';
import type { TelemetryRow } from '../telemetry/csv.js';
import type { runVariant } from './run-variant.js';

export type ScenarioName = 'capacity' | 'original' | 'sockets' | 'fair' | 'loss' | 'connect' | 'direct';

/** What a variant's client process runs (JSON: it crosses into the client process). */
export type ClientSpec =
  /** node-postgres sessions, one TCP connection each (TLS after SSLRequest when `tls`). */
  | { readonly kind: 'pg'; readonly sessions: number; readonly tls: boolean; readonly prepare: boolean }
  /** node-postgres sessions, each a QUIC stream of @quicpool/client's SessionManager. */
  | { readonly kind: 'quic'; readonly connections: number; readonly streams: number; readonly prepare: boolean }
  /** Per query a new session: TCP + TLS + SCRAM, the query, close. */
  | { readonly kind: 'connect-tcp' }
  /** Per query a new QUIC stream (startup + SCRAM) on one connection kept open. */
  | { readonly kind: 'connect-stream' }
  /** Per query a new QUIC connection resumed with a session ticket (0-RTT), one stream, close. */
  | { readonly kind: 'connect-0rtt' };

export type LoadSpec =
  /** Open loop: an optional constant-rate probe first (fixed costs), then the ramp. */
  | { readonly kind: 'open'; readonly probe: { readonly rate: number; readonly seconds: number } | null; readonly ramp: Ramp; readonly tickMs: number; readonly timeoutMs: number }
  /** Closed loop in steps (capacity): each step `workers` sessions issue back to back. */
  | { readonly kind: 'closed'; readonly steps: readonly { readonly workers: number; readonly seconds: number }[]; readonly warmupSeconds: number; readonly timeoutMs: number };

export interface VariantPlan {
  /** CSV names, chart legends, JSON keys: 'tcp', 'quic', ... */
  readonly name: string;
  /** For people: "TCP, 22 sessions, TLS". */
  readonly label: string;
  readonly client: ClientSpec;
  /** Through the quicpool daemon over the WAN path, through PgBouncer over it (a reference, `--pgbouncer`), or straight to Postgres (no path). */
  readonly route: 'pooler' | 'pgbouncer' | 'postgres';
}

export interface ScenarioPlan {
  readonly name: ScenarioName;
  readonly title: string;
  /** What is compared and why, and how the load was scaled. */
  readonly description: string;
  /** capacity and direct: checks of the set-up, shown last. */
  readonly sanity: boolean;
  /** The WAN between client and pooler; null: none (direct to Postgres). */
  readonly wan: { readonly delayMs: number; readonly lossRate: number } | null;
  readonly variants: readonly VariantPlan[];
  readonly load: LoadSpec;
  /** Round trips per query on an open session (2 with prepare + execute). */
  readonly roundTripsPerQuery: number;
}

/** A telemetry row as the client process sends it, with where in the load it belongs (step: the closed loop's, else 0). */
export type PhasedRow = Readonly<{ phase: 'probe' | 'load' | 'drain'; step: number; row: TelemetryRow }>;

/** The WAN path of one run, as measured. */
export interface PathFacts {
  readonly mode: 'packet' | 'relay' | 'none';
  /** Round trip through the path (UDP echo through it, or the relay's own probe), ms. */
  readonly rttMs: number | null;
  readonly rttP99Ms: number | null;
  /** Packets dropped by the path's random loss (up, down) and by a full queue. */
  readonly randomDrops: readonly [number, number] | null;
  readonly queueDrops: number | null;
  /** The forwarder's release lateness p99 (µs, worse direction). */
  readonly lateP99Us: number | null;
  /** How the forwarder was scheduled ('fifo:10' = real-time as root), null without one. */
  readonly forwarderSched: string | null;
  readonly description: string;
}

export type VariantRun = Awaited<ReturnType<typeof runVariant>>;

/** A figure over the rounds: median, the spread, every round's value. */
export type RoundStat = Readonly<{ median: number | null; min: number | null; max: number | null; values: readonly (number | null)[] }>;

export type ScenarioResult =
  | {
      readonly kind: 'ran';
      readonly plan: ScenarioPlan;
      /** rounds[r][v]: round r, variant in plan order. */
      readonly rounds: readonly (readonly VariantRun[])[];
      /** The scenario's own figures, per round and over the rounds. */
      readonly figures: Readonly<Record<string, RoundStat>>;
      /** Figures that decide the answer; flagged when their rounds differ by more than 15%. */
      readonly keyFigures: readonly string[];
      readonly unstable: readonly string[];
      /** The round whose first key figure is the median (its rows are drawn). */
      readonly shownRound: number;
      /** One sentence from the figures: the scenario's answer. */
      readonly answer: string;
      readonly notes: readonly string[];
    }
  | { readonly kind: 'unavailable'; readonly name: ScenarioName; readonly title: string; readonly needs: string }
  /** A run that broke (a process failed to start or died): the other scenarios still run. */
  | { readonly kind: 'failed'; readonly name: ScenarioName; readonly title: string; readonly error: string };
