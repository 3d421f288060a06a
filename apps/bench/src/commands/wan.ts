// `quicpool-bench wan`: the WAN relay as its own process, so its CPU does not mix with what a
// benchmark measures (the fallback path of `bench`, and the WAN of `client`, `connect`), spawned
// by stack/relay.ts. First stdout line: one JSON object {"event":"listening","host","port",
// "measuredRtt",...} that the parent reads to learn the port. SIGTERM/SIGINT (or, with
// --watch-stdin, EOF on stdin: the parent died) close everything and print a final stats line.
import { choiceOption, defineCommand, UsageError } from '../command-line.js';
import { startWanEmulator } from '../wan/emulator.js';

function hostPort(value: string | undefined, what: string): { host: string; port: number } {
  const match = value === undefined ? null : /^(.*):(\d+)$/.exec(value);
  if (match === null) throw new UsageError(`--${what} must be host:port`);
  return { host: (match[1] ?? '').replace(/^\[|\]$/g, ''), port: Number(match[2]) };
}

export const command = defineCommand({
  options: {
    target: { type: 'string' },
    listen: { type: 'string', default: '127.0.0.1:0' },
    delay: { type: 'string', default: '0' },
    loss: { type: 'string', default: '0' },
    protocol: { type: 'string', default: 'both' },
    seed: { type: 'string', default: '1' },
    'watch-stdin': { type: 'boolean', default: false },
  },
  async run({ values }) {
    const target = hostPort(values.target, 'target');
    const listen = hostPort(values.listen, 'listen');
    const emulator = await startWanEmulator({
      listenHost: listen.host,
      listenPort: listen.port,
      targetHost: target.host,
      targetPort: target.port,
      protocol: choiceOption('protocol', values.protocol, ['tcp', 'udp', 'both'] as const),
      delayMs: Number(values.delay),
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
      void emulator.close().then(() => {
        process.stdout.write(`${JSON.stringify({ event: 'closed', ...final })}\n`);
        process.exit(0);
      });
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
    if (values['watch-stdin'] === true) {
      process.stdin.on('end', stop);
      process.stdin.resume();
    }
    return null;
  },
});
