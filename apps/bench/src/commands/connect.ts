// `quicpool-bench connect` (`pnpm bench:connect`, connect/run-connect.ts); --sessions: held open each way in its part (c).
import { defineCommand, JSON_OPTION, wholeOption } from '../command-line.js';
import { runConnectBench } from '../connect/run-connect.js';
import { PATH_OPTION, pathOption } from '../stack/wan-path.js';

export const command = defineCommand({
  options: {
    ...JSON_OPTION,
    ...PATH_OPTION,
    delay: { type: 'string', default: '15' },
    trials: { type: 'string', default: '20' },
    clients: { type: 'string', default: '50' },
    seconds: { type: 'string', default: '10' },
    sessions: { type: 'string', default: '2000' },
  },
  run: ({ values }) => runConnectBench({
    oneWayMs: wholeOption('delay', values.delay, 0),
    trials: wholeOption('trials', values.trials),
    clients: wholeOption('clients', values.clients),
    seconds: wholeOption('seconds', values.seconds),
    sessions: wholeOption('sessions', values.sessions),
    json: values.json,
    path: pathOption(values.path),
  }),
});
