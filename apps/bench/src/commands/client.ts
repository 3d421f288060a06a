// `quicpool-bench client` (`pnpm bench:client`, client/run-client.ts); --parts a,b,c: which of its three parts run.
import { defineCommand, JSON_OPTION, UsageError, wholeOption } from '../command-line.js';
import { runClientBench } from '../client/run-client.js';
import { PATH_OPTION, pathOption } from '../stack/wan-path.js';

function partsOf(value: string): { cold: boolean; idle: boolean; drain: boolean } {
  const list = value.split(',').map((x) => x.trim());
  for (const x of list) if (x !== 'a' && x !== 'b' && x !== 'c') throw new UsageError(`--parts takes a, b and c, got ${x}`);
  return { cold: list.includes('a'), idle: list.includes('b'), drain: list.includes('c') };
}

export const command = defineCommand({
  options: {
    ...JSON_OPTION,
    ...PATH_OPTION,
    parts: { type: 'string', default: 'a,b,c' },
    delay: { type: 'string', default: '15' },
    trials: { type: 'string', default: '5' },
    sessions: { type: 'string', default: '2000' },
    'quic-connections': { type: 'string', default: '50' },
    streams: { type: 'string', default: '40' },
    'pool-size': { type: 'string', default: '20' },
  },
  run: ({ values, program }) => runClientBench({
    oneWayMs: wholeOption('delay', values.delay, 0),
    trials: wholeOption('trials', values.trials),
    sessions: wholeOption('sessions', values.sessions, 100),
    quicConnections: wholeOption('quic-connections', values['quic-connections']),
    streamsPerConnection: wholeOption('streams', values.streams),
    poolSize: wholeOption('pool-size', values['pool-size']),
    json: values.json,
    parts: partsOf(values.parts),
    path: pathOption(values.path),
    script: program,
  }),
});
