// `quicpool-bench faults` (`pnpm bench:faults`, faults/run-faults.ts). --json: {"restart": {...}, "failover": {...}}.
import { defineCommand, JSON_OPTION, wholeOption } from '../command-line.js';
import { runFaultsBench } from '../faults/run-faults.js';

export const command = defineCommand({
  options: {
    ...JSON_OPTION,
    clients: { type: 'string', default: '20' },
    seconds: { type: 'string', default: '6' },
    'pool-size': { type: 'string', default: '10' },
  },
  run: ({ values }) => runFaultsBench({
    clients: wholeOption('clients', values.clients),
    seconds: wholeOption('seconds', values.seconds, 2),
    poolSize: wholeOption('pool-size', values['pool-size']),
    json: values.json,
  }),
});
