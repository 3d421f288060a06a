// `pnpm bench:client`: cold start to first row, idle-session cost and time to drain 2,000
// sessions, TCP+TLS vs the quicpool client over QUIC, under the WAN emulator, in one run.
//   node dist/bin/client.js [--json] [--parts a,b,c] [--delay 15] [--trials 5] [--sessions 2000]
//                           [--quic-connections 50] [--streams 40] [--pool-size 20]
// With --json the last line is one JSON object of the figures. The pooler is the real quicpool
// daemon; this program is also the forked idle-session worker (IDLE_FLAG) of its own runs.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseCommandLine, wholeOption } from '../command-line.js';
import { IDLE_FLAG, runIdleWorker } from '../client/idle-sessions.js';
import type { IdleWorkerConfig } from '../client/idle-sessions.js';
import { runClientBench } from '../client/run-client.js';

const script = fileURLToPath(import.meta.url);
const idleAt = process.argv.indexOf(IDLE_FLAG);
if (idleAt >= 0) {
  try {
    await runIdleWorker(JSON.parse(process.argv[idleAt + 1] ?? '{}') as IdleWorkerConfig);
    process.exit(0);
  } catch (e) {
    process.stderr.write(`idle worker failed: ${e instanceof Error ? e.stack ?? e.message : String(e)}\n`);
    process.exit(1);
  }
} else {
  const { values } = parseCommandLine('pnpm bench:client', {
    options: {
      json: { type: 'boolean', default: false },
      parts: { type: 'string', default: 'a,b,c' },
      delay: { type: 'string', default: '15' },
      trials: { type: 'string', default: '5' },
      sessions: { type: 'string', default: '2000' },
      'quic-connections': { type: 'string', default: '50' },
      streams: { type: 'string', default: '40' },
      'pool-size': { type: 'string', default: '20' },
    },
  });
  const partsOf = (v: string): { cold: boolean; idle: boolean; drain: boolean } => {
    const list = v.split(',').map((x) => x.trim());
    for (const x of list) if (x !== 'a' && x !== 'b' && x !== 'c') throw new Error(`--parts takes a, b and c, got ${x}`);
    return { cold: list.includes('a'), idle: list.includes('b'), drain: list.includes('c') };
  };
  try {
    await runClientBench({
      oneWayMs: wholeOption('delay', values.delay, 0),
      trials: wholeOption('trials', values.trials),
      sessions: wholeOption('sessions', values.sessions, 100),
      quicConnections: wholeOption('quic-connections', values['quic-connections']),
      streamsPerConnection: wholeOption('streams', values.streams),
      poolSize: wholeOption('pool-size', values['pool-size']),
      json: values.json,
      parts: partsOf(values.parts),
      script,
      wanScript: join(dirname(script), 'wan.js'),
    });
  } catch (e) {
    process.stderr.write(`bench:client failed: ${e instanceof Error ? e.stack ?? e.message : String(e)}\n`);
    process.exitCode = 1;
  }
}
