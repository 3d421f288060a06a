// The WAN emulator as its own process, so its CPU does not mix with what a benchmark measures.
//   node dist/bin/wan.js --target 127.0.0.1:5432 --delay 15 [--loss 0.01] [--protocol both]
//                        [--listen 127.0.0.1:0] [--seed 1] [--stats-ms 1000] [--watch-stdin]
// First stdout line: one JSON object {"event":"listening","host","port","measuredRtt",...} that a
// parent process reads to learn the port. With --stats-ms, a JSON stats line follows periodically.
// SIGTERM/SIGINT close everything and print a final stats line.
import { parseArgs } from 'node:util';
import type { WanProtocol } from '../wan/index.js';
import { startWanEmulator } from '../wan/index.js';

const { values } = parseArgs({
  options: {
    target: { type: 'string' },
    listen: { type: 'string', default: '127.0.0.1:0' },
    delay: { type: 'string', default: '0' },
    'delay-down': { type: 'string' },
    loss: { type: 'string', default: '0' },
    protocol: { type: 'string', default: 'both' },
    seed: { type: 'string', default: '1' },
    'stats-ms': { type: 'string' },
    'watch-stdin': { type: 'boolean', default: false },
  },
});

function hostPort(value: string | undefined, what: string): { host: string; port: number } {
  const match = value === undefined ? null : /^(.*):(\d+)$/.exec(value);
  if (match === null) throw new Error(`--${what} must be host:port`);
  return { host: (match[1] ?? '').replace(/^\[|\]$/g, ''), port: Number(match[2]) };
}

function protocolOf(value: string | undefined): WanProtocol {
  if (value === 'tcp' || value === 'udp' || value === 'both') return value;
  throw new Error('--protocol must be tcp, udp or both');
}

const target = hostPort(values.target, 'target');
const listen = hostPort(values.listen, 'listen');
const up = Number(values.delay);
const emulator = await startWanEmulator({
  listenHost: listen.host,
  listenPort: listen.port,
  targetHost: target.host,
  targetPort: target.port,
  protocol: protocolOf(values.protocol),
  delayMs: { up, down: values['delay-down'] === undefined ? up : Number(values['delay-down']) },
  lossRate: Number(values.loss),
  seed: Number(values.seed),
});
const stats = emulator.stats();
process.stdout.write(
  `${JSON.stringify({ event: 'listening', host: emulator.host, port: emulator.port, protocol: stats.protocol, configured: stats.configured, measuredRtt: stats.measuredRtt })}\n`,
);

const interval =
  values['stats-ms'] === undefined
    ? null
    : setInterval(() => process.stdout.write(`${JSON.stringify({ event: 'stats', ...emulator.stats() })}\n`), Number(values['stats-ms']));

let stopping = false;
const stop = (): void => {
  if (stopping) return;
  stopping = true;
  if (interval !== null) clearInterval(interval);
  const final = emulator.stats();
  emulator.close().then(() => {
    process.stdout.write(`${JSON.stringify({ event: 'closed', ...final })}\n`);
    process.exit(0);
  });
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
// With --watch-stdin, a parent that dies without signalling (its end of our stdin pipe closes)
// stops us too.
if (values['watch-stdin'] === true) {
  process.stdin.on('end', stop);
  process.stdin.resume();
}
