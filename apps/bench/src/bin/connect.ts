// `pnpm bench:connect`: pgbench and time to first row, straight to the pooler over TCP+TLS vs
// through `quicpool connect`'s agent over QUIC, under the WAN emulator, and the pooler's sockets
// and memory with --sessions held open each way.
//   node dist/bin/connect.js [--json] [--delay 15] [--trials 20] [--clients 50] [--seconds 10] [--sessions 2000]
// With --json the last line is one JSON object of the figures.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseCommandLine, wholeOption } from '../command-line.js';
import { runConnectBench } from '../connect/run-connect.js';

const { values } = parseCommandLine('pnpm bench:connect', {
  options: {
    json: { type: 'boolean', default: false },
    delay: { type: 'string', default: '15' },
    trials: { type: 'string', default: '20' },
    clients: { type: 'string', default: '50' },
    seconds: { type: 'string', default: '10' },
    sessions: { type: 'string', default: '2000' },
  },
});
try {
  await runConnectBench({
    oneWayMs: wholeOption('delay', values.delay, 0),
    trials: wholeOption('trials', values.trials),
    clients: wholeOption('clients', values.clients),
    seconds: wholeOption('seconds', values.seconds),
    sessions: wholeOption('sessions', values.sessions),
    json: values.json,
    wanScript: join(dirname(fileURLToPath(import.meta.url)), 'wan.js'),
  });
} catch (e) {
  process.stderr.write(`bench:connect failed: ${e instanceof Error ? e.stack ?? e.message : String(e)}\n`);
  process.exitCode = 1;
}
