// `pnpm bench:faults`: a PostgreSQL restart and a failover under load, through quicpool (TCP and
// QUIC) and PgBouncer (when installed), same load, same run (see faults/run-faults.ts).
//   node dist/bin/faults.js [--json] [--clients 20] [--seconds 6] [--pool-size 10]
// With --json the last line is one JSON object: {"restart": {...}, "failover": {...}}.
import { parseCommandLine, wholeOption } from '../command-line.js';
import { runFaultsBench } from '../faults/run-faults.js';

const { values } = parseCommandLine('pnpm bench:faults', {
  options: {
    json: { type: 'boolean', default: false },
    clients: { type: 'string', default: '20' },
    seconds: { type: 'string', default: '6' },
    'pool-size': { type: 'string', default: '10' },
  },
});
try {
  await runFaultsBench({
    clients: wholeOption('clients', values.clients),
    seconds: wholeOption('seconds', values.seconds, 2),
    poolSize: wholeOption('pool-size', values['pool-size']),
    json: values.json,
  });
} catch (e) {
  process.stderr.write(`bench:faults failed: ${e instanceof Error ? e.stack ?? e.message : String(e)}\n`);
  process.exitCode = 1;
}
