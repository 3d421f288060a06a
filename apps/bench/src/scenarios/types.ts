// The shapes every scenario shares. A scenario is a list of client variants run one after the
// other (never at once: they would share the 2 cores and the client process's CPU/RSS columns)
// under the same load, each producing one telemetry CSV; the report puts them on the same axes.
import type { ClientConfig } from 'pg';
import type { ClientVariant } from '../load/variant.js';
import type { Ramp } from '../load/schedule.js';
import type { TelemetryRow } from '../telemetry/csv.js';
import type { FailureReason } from '../telemetry/recorder.js';

export interface ProgressEvent {
  scenario: string;
  variant: string;
  /** 0-based row index within this variant's run. */
  index: number;
  /** Rows the run is expected to produce (ramp seconds), for a progress bar. */
  expectedRows: number;
  row: TelemetryRow;
}

export interface ScenarioContext {
  /** Where Postgres is (direct, no pooler). */
  pg: ClientConfig;
  quick: boolean;
  /** Reproduce the original code's behaviour (0 -> 10k q/s ramp in 500 ms ticks, prepare per query). */
  originalExact: boolean;
  onProgress: (event: ProgressEvent) => void;
  log: (line: string) => void;
  /** Tests shrink scenarios to seconds with these. */
  overrides?: ScenarioOverrides;
  /**
   * The bench program's built file (dist/bin/bench.js): the pooler, the WAN emulator and each
   * variant's load generator run as its workers. Null: no helper processes (direct, capacity only).
   */
  script: string | null;
}

/** Tests shrink scenarios to seconds with these (every field optional). */
export interface ScenarioOverrides {
  ramp?: Ramp;
  /** Sessions of `direct`. */
  sessions?: number;
  capacityStepMs?: number;
  capacitySessions?: readonly number[];
  /** Scales the session counts of original/sockets/fair/loss (e.g. 0.01 in tests). */
  sessionScale?: number;
  /** Seconds per target in `lan`. */
  lanSeconds?: number;
  /** One-way WAN delay (ms); default 15. */
  delayMs?: number;
}

/** A variant ready to run, with what the telemetry needs to know about its surroundings. */
export interface PreparedVariant {
  variant: ClientVariant;
  /** The pooler process to sample (/proc), or null when the variant talks to Postgres directly. */
  poolerPid: number | null;
  /** RTT measured on this variant's path (ms), or null without an emulated WAN. */
  rttMs: number | null;
  /** Stops whatever prepare() started (pooler, WAN emulator). */
  dispose(): Promise<void>;
  /** Facts about the path read after the run (e.g. packets dropped), for the report. */
  info?: () => Record<string, string | number | null>;
}

/** How to build a variant for a run: pooler/QUIC variants start their processes in prepare(). */
export interface VariantPlan {
  name: string;
  prepare(ctx: ScenarioContext): Promise<PreparedVariant>;
}

export interface LatencySummary {
  meanUs: number;
  p50Us: number;
  p90Us: number;
  p99Us: number;
  p999Us: number;
  maxUs: number;
}

/** One variant's run within a scenario: the CSV rows and the totals behind the summary. */
export interface VariantRun {
  scenario: string;
  variant: string;
  sessions: number;
  rows: TelemetryRow[];
  /** Rows that fall inside the ramp (the rest are the drain). */
  rampRows: number;
  offered: number;
  issued: number;
  processed: number;
  failed: number;
  failures: Record<FailureReason, number>;
  latency: LatencySummary;
  rttMs: number | null;
  openMs: number;
  durationMs: number;
  /** File descriptors the client process held with every session open (null when not measured). */
  fds?: number | null;
  /** The first distinct error messages of failed queries (reason 'error'). */
  errors?: string[];
  /** Facts about the path (loss method, packets dropped...). */
  info?: Record<string, string | number | null>;
}

export type ScenarioResult =
  | {
      kind: 'load';
      name: string;
      title: string;
      description: string;
      ramp: Ramp;
      runs: VariantRun[];
      /** Scenario-specific figures (e.g. last-5-s rates, Little's-law bound), also in the JSON. */
      extra?: Record<string, number | string | boolean | null>;
      /** Plain-language findings and caveats shown in the report. */
      notes?: string[];
    }
  | {
      kind: 'lan';
      name: string;
      title: string;
      description: string;
      /** Our load generator, closed loop, queries/s per target. */
      tps: Record<string, number | null>;
      /** pgbench with the workload query, per target (null when pgbench is missing). */
      pgbench: Record<string, number | null> | null;
      runs: VariantRun[];
      notes: string[];
    }
  | {
      kind: 'capacity';
      name: string;
      title: string;
      description: string;
      qps: number;
      bestSessions: number;
      steps: Array<{ sessions: number; qps: number; failed: number }>;
      runs: VariantRun[];
    }
  | { kind: 'unavailable'; name: string; title: string; needs: string };

export interface Scenario {
  name: string;
  title: string;
  run(ctx: ScenarioContext): Promise<ScenarioResult>;
}
