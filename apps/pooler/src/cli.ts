// quicpool CLI. For now `start` brings up the embedded PostgreSQL and prints how to connect; the
// pooler itself plugs in here as its packages land (see the issues in the README).
import { parseArgs } from 'node:util';
import { startEmbedded } from './embedded.js';

const HELP = `quicpool - PostgreSQL over QUIC streams

Usage:
  quicpool start [--state-dir DIR] [--pg-port PORT]   start (embedded PostgreSQL when no upstream is configured)
  quicpool --help

Options:
  --state-dir DIR   where the embedded PostgreSQL keeps its data and credentials (default: .quicpool)
  --pg-port PORT    port of the embedded PostgreSQL on first start (default: 54329)
`;

async function start(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { 'state-dir': { type: 'string', default: '.quicpool' }, 'pg-port': { type: 'string', default: '54329' }, help: { type: 'boolean' } },
  });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const port = Number(values['pg-port']);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    process.stderr.write(`quicpool: --pg-port must be a port number (1-65535), got ${values['pg-port']}\n`);
    return 2;
  }
  const { server, state } = await startEmbedded(values['state-dir'], port);
  const { info } = server;
  process.stdout.write(
    `PostgreSQL ${info.serverVersion} is running (data: ${state.dataDir}).\n` +
      `Connect:  ${server.connectionString()}\n` +
      `Press Ctrl-C to stop.\n`,
  );
  await new Promise<void>((resolveStop) => {
    const stop = (signal: NodeJS.Signals) => {
      process.stdout.write(`\n${signal}: stopping PostgreSQL...\n`);
      resolveStop();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await server.stop();
  return 0;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'start':
      return start(rest);
    case undefined:
    case '--help':
    case '-h':
    case 'help':
      process.stdout.write(HELP);
      return command === undefined ? 2 : 0;
    default:
      process.stderr.write(`quicpool: unknown command '${command}'\n\n${HELP}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`quicpool: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
