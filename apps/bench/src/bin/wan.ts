// The WAN relay as its own process, so its CPU does not mix with what a benchmark measures (the
// fallback path of `pnpm bench`, and bench:client's WAN).
//   node dist/bin/wan.js --target 127.0.0.1:5432 --delay 15 [--loss 0.01] [--protocol both]
//                        [--listen 127.0.0.1:0] [--seed 1] [--watch-stdin]
// First stdout line: one JSON object {"event":"listening","host","port","measuredRtt",...} that a
// parent process reads to learn the port. SIGTERM/SIGINT close everything and print a final stats line.
import { parseArgs } from 'node:util';
import type { WanProtocol } from '../wan/emulator.js';
import { startWanEmulator } from '../wan/emulator.js';

const { values } = parseArgs({
  options: {
    target: { type: 'string' },
    listen: { type: 'string', default: '127.0.0.1:0' },
    delay: { type: 'string', default: '0' },
    loss: { type: 'string', default: '0' },
    protocol: { type: 'string', default: 'both' },
    seed: { type: 'string', default: '1' },
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
  delayMs: up,
  lossRate: Number(values.loss),
  seed: Number(values.seed),
});
const stats = emulator.stats();
process.stdout.write(
  `${JSON.stringify({ event: 'listening', host: emulator.host, port: emulator.port, protocol: stats.protocol, configured: stats.configured, measuredRtt: stats.measuredRtt })}\n`,
);

let stopping = false;
const stop = (): void => {
  if (stopping) return;
  stopping = true;
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
