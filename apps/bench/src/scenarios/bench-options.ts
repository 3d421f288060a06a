// Command-line options of `quicpool-bench bench` (`pnpm bench`): the table and the BenchOptions
// it gives (defaults that depend on --quick are filled in here).
import { choiceOption, JSON_OPTION, numberOption, UsageError } from '../command-line.js';
import type { Values } from '../command-line.js';
import { SCENARIO_NAMES } from './plans.js';
import type { BenchOptions } from './run-bench.js';

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
  path: { type: 'string', default: 'auto' },
  'congestion-control': { type: 'string', default: 'cubic' },
  seed: { type: 'string', default: '1' },
  pgbouncer: { type: 'boolean', default: false },
  workers: { type: 'string', default: '1' },
} as const;

/** `--workers 1,2`: the daemon's worker counts, each a whole run of the scenarios. */
export function workerCounts(value: string): number[] {
  return [...new Set(value.split(',').map((w) => Math.round(numberOption('workers', w, 1, 256))))];
}

export function benchOptionsOf(values: Values<typeof BENCH_OPTIONS>, args: readonly string[]): Omit<BenchOptions, 'workers'> {
  const scenarios = (values.scenario ?? [...SCENARIO_NAMES]).map((name) => {
    const found = SCENARIO_NAMES.find((s) => s === name);
    if (found === undefined) throw new UsageError(`unknown scenario '${name}'; known: ${SCENARIO_NAMES.join(', ')}`);
    return found;
  });
  const quick = values.quick;
  return {
    quick,
    originalExact: values['original-exact'],
    seedScale: values['seed-scale'],
    delayMs: numberOption('delay-ms', values['delay-ms'], 0),
    rampSeconds: numberOption('ramp-seconds', values['ramp-seconds'] ?? (quick ? '4' : '15'), 1),
    probeSeconds: numberOption('probe-seconds', values['probe-seconds'], 0),
    lossRate: numberOption('loss', values.loss, 0),
    steadyRate: values.steady === undefined ? null : numberOption('steady', values.steady, 1),
    pgbouncer: values.pgbouncer,
    scenarios,
    rounds: Math.round(numberOption('rounds', values.rounds ?? (quick ? '1' : '3'), 1)),
    peak: values.peak === undefined ? null : numberOption('peak', values.peak, 1),
    path: choiceOption('path', values.path, ['auto', 'packet', 'relay'] as const),
    congestionControl: choiceOption('congestion-control', values['congestion-control'], ['cubic', 'reno', 'bbr'] as const),
    seed: Math.round(numberOption('seed', values.seed, 0)),
    out: values.out ?? null,
    png: !values['no-png'],
    command: `bench ${args.join(' ')}`.trim(),
  };
}
