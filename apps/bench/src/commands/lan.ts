// `quicpool-bench lan` (`pnpm bench:lan`): --quick: 5 s per target; --targets may add the Node forwarders; see LanOptions.
import { defineCommand, JSON_OPTION, numberOption, UsageError, wholeOption } from '../command-line.js';
import { runLan, SELECTABLE_TARGETS } from '../lan/run-lan.js';

export const command = defineCommand({
  options: {
    ...JSON_OPTION,
    quick: { type: 'boolean', default: false },
    duration: { type: 'string' },
    warmup: { type: 'string', default: '2' },
    rounds: { type: 'string', default: '1' },
    clients: { type: 'string', default: '50' },
    jobs: { type: 'string', default: '2' },
    'pool-size': { type: 'string', default: '20' },
    profile: { type: 'string' },
    targets: { type: 'string', default: 'direct,quicpoolTcp,pgbouncer' },
    rate: { type: 'string' },
    baseline: { type: 'string' },
    'worker-flag': { type: 'string', multiple: true, default: [] },
    workers: { type: 'string', default: '1' },
  },
  run: ({ values, program }) => runLan({
    durationS: wholeOption('duration', values.duration ?? (values.quick ? '5' : '20'), 0),
    warmupS: wholeOption('warmup', values.warmup, 0),
    rounds: Math.max(1, wholeOption('rounds', values.rounds, 0)),
    clients: wholeOption('clients', values.clients, 0),
    jobs: wholeOption('jobs', values.jobs, 0),
    poolSize: wholeOption('pool-size', values['pool-size'], 0),
    json: values.json,
    profileDir: values.profile ?? null,
    workerFlags: values['worker-flag'],
    rate: values.rate === undefined ? null : wholeOption('rate', values.rate, 0),
    baseline: values.baseline ?? null,
    targets: new Set(values.targets.split(',').map((t) => {
      const known = SELECTABLE_TARGETS.find((name) => name === t);
      if (known === undefined) throw new UsageError(`--targets: unknown target ${t}`);
      return known;
    })),
    script: program,
    workers: [...new Set(values.workers.split(',').map((w) => numberOption('workers', w, 1, 256, true)))],
  }),
});
