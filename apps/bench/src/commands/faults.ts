// `quicpool-bench faults` (`pnpm bench:faults`): a PostgreSQL restart and a failover under load,
// through quicpool (TCP and QUIC) and PgBouncer (when installed), same load, same run (see
// faults/run-faults.ts). With --json the last line is {"restart": {...}, "failover": {...}}.
import { defineCommand, JSON_OPTION, wholeOption } from '../command-line.js';
import { runFaultsBench } from '../faults/run-faults.js';

export const command = defineCommand({
  options: {
    ...JSON_OPTION,
    clients: { type: 'string', default: '20' },
    seconds: { type: 'string', default: '6' },
    'pool-size': { type: 'string', default: '10' },
  },
  async run({ values }) {
    await runFaultsBench({
      clients: wholeOption('clients', values.clients),
      seconds: wholeOption('seconds', values.seconds, 2),
      poolSize: wholeOption('pool-size', values['pool-size']),
      json: values.json,
    });
    return 0;
  },
});
