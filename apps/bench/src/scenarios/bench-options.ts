// Options of `quicpool-bench bench` (`pnpm bench`): the table and the BenchOptions it gives (--quick's defaults filled in).
import { choiceOption, JSON_OPTION, numberOption, UsageError } from '../command-line.js';
import type { Values } from '../command-line.js';
import { PATH_OPTION, pathOption } from '../stack/wan-path.js';
import { SCENARIO_NAMES } from './plans.js';
import type { ScenarioName } from './types.js';

export const BENCH_OPTIONS = {
  quick: { type: 'boolean', default: false },
  scenario: { type: 'string', multiple: true },
  rounds: { type: 'string' },
  pg: { type: 'string' },
  out: { type: 'string' },
  ...JSON_OPTION,
  'no-png': { type: 'boolean', default: false },
  'original-exact': { type: 'boolean', default: false },
  'seed-scale': { type: 'boolean', default: false },
  peak: { type: 'string' },
  steady: { type: 'string' },
  'delay-ms': { type: 'string', default: '15' },
  'ramp-seconds': { type: 'string' },
  'probe-seconds': { type: 'string', default: '2' },
  loss: { type: 'string', default: '0.01' },
  ...PATH_OPTION,
  'congestion-control': { type: 'string', default: 'cubic' },
  seed: { type: 'string', default: '1' },
  pgbouncer: { type: 'boolean', default: false },
  workers: { type: 'string', default: '1' },
} as const;

/** `--workers 1,2`: the daemon's worker counts, each a whole run of the scenarios. */
export const workerCounts = (value: string): number[] => [...new Set(value.split(',').map((w) => Math.round(numberOption('workers', w, 1, 256))))];

export function benchOptionsOf(values: Values<typeof BENCH_OPTIONS>, args: readonly string[]) {
  const scenarios: readonly ScenarioName[] = (values.scenario ?? [...SCENARIO_NAMES]).map((name) => {
    const found = SCENARIO_NAMES.find((s) => s === name);
    if (found === undefined) throw new UsageError(`unknown scenario '${name}'; known: ${SCENARIO_NAMES.join(', ')}`);
    return found;
  });
  const quick = values.quick;
  return {
    quick,
    /** The original code's load: 500 ms steps from 0, prepare + execute (two round trips). */
    originalExact: values['original-exact'],
    seedScale: values['seed-scale'],
    /** One-way delay of the WAN, ms (15: 30 ms RTT, the article's). */
    delayMs: numberOption('delay-ms', values['delay-ms'], 0),
    /** Length of every WAN ramp; in quick mode it also bounds the other scenarios' loads. */
    rampSeconds: numberOption('ramp-seconds', values['ramp-seconds'] ?? (quick ? '4' : '15'), 1),
    /** Length of the low constant-rate probe before each open-loop load (fixed costs). */
    probeSeconds: numberOption('probe-seconds', values['probe-seconds'], 0),
    lossRate: numberOption('loss', values.loss, 0),
    /** A constant offered rate (q/s) for the WAN scenarios instead of a ramp; null: ramp. */
    steadyRate: values.steady === undefined ? null : numberOption('steady', values.steady, 1),
    /** The original scenario also runs its TCP + TLS clients through PgBouncer (a reference). */
    pgbouncer: values.pgbouncer,
    scenarios,
    rounds: Math.round(numberOption('rounds', values.rounds ?? (quick ? '1' : '3'), 1)),
    /** Skip the capacity measurement and peak every WAN ramp here (q/s). */
    peak: values.peak === undefined ? null : numberOption('peak', values.peak, 1),
    path: pathOption(values.path),
    congestionControl: choiceOption('congestion-control', values['congestion-control'], ['cubic', 'reno', 'bbr'] as const),
    seed: Math.round(numberOption('seed', values.seed, 0)),
    out: values.out ?? null,
    png: !values['no-png'],
    command: `bench ${args.join(' ')}`.trim(),
  };
}
