// quicpool CLI: start, check-config, cert, connect, --version (and config-reference, which writes docs/config.md).
import { existsSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { ConfigFileError, loadConfig } from './config/load.js';
import { configReference } from './config/reference.js';
import { EXIT } from './exit-codes.js';

const HELP = `quicpool - a PostgreSQL pooler over TCP, TLS and QUIC streams

Usage:
  quicpool start [--config FILE] [options]   run the pooler (embedded PostgreSQL when no upstream is configured)
  quicpool check-config FILE                 validate a config file and exit
  quicpool cert [--out DIR] [--name NAME]... generate a development CA and server certificate
  quicpool connect --endpoint HOST:PORT ...  the local agent: any Postgres client -> QUIC -> poolers
  quicpool <command> --help
  quicpool --version                         this version, the Node.js running it, its flags and the fast paths on

Exit codes: 0 stopped cleanly / success, 1 runtime failure, 2 invalid command line or config,
3 stopped at once by a second SIGTERM/SIGINT.
Config reference: docs/config.md in the quicpool repository.
`;

const START_HELP = `quicpool start [--config FILE] [options]

Runs the pooler: TCP ${'6432'} and QUIC ${'6432'}/udp by default, admin console as database "quicpool",
Prometheus metrics on http://127.0.0.1:9432/metrics. Without [upstream] host it starts an embedded
PostgreSQL whose data and credentials live in --state-dir (a second start reuses them).

Config file: --config FILE, else $QUICPOOL_CONFIG when set, else ./quicpool.toml when it exists,
else none (every key at its default).

Options (each is a config key; precedence: flag > QUICPOOL_SECTION_KEY env > file > default):
  --config FILE        TOML config file (see above)
  --state-dir DIR      embedded.state_dir   (default .quicpool, relative to the working directory)
  --pg-port PORT       embedded.port        (default 54329)
  --host ADDR          listen.host          (default 127.0.0.1)
  --port PORT          listen.port          (default 6432)
  --quic-port PORT     listen.quic_port     (default 6432)
  --metrics-port PORT  metrics.port         (default 9432)
  --set KEY=VALUE      any key, e.g. --set pool.size=50 (repeatable)

Signals: SIGTERM/SIGINT drain gracefully (shutdown.drain_timeout_ms), a second one stops at once;
SIGHUP reloads the config file.
`;

const CERT_HELP = `quicpool cert [--out DIR] [--name NAME]...

Generates a development CA (ca.pem) and a server certificate (server.pem, server.key) signed by
it, valid 30 days, for the given names (default localhost, 127.0.0.1, ::1). Prints the paths and
the certificate's SHA-256 fingerprint. Point [tls] cert_file/key_file at them, and clients at ca.pem.
`;

const CHECK_HELP = `quicpool check-config FILE

Loads FILE as quicpool start would (including the users file and certificate files) and reports
the first error, naming the file and the key. Exit 0 when valid, 2 when not.
`;

const CONNECT_HELP = `quicpool connect [--config FILE] --endpoint HOST:PORT... [options]

The local agent: listens on a local TCP port and a unix socket (.s.PGSQL.<port>) and carries every
local Postgres connection (psql, pgbench, libpq, JDBC, pgx, psycopg, Prisma ...) as its own QUIC
stream to the poolers: N connections x M streams, failover over the endpoints, 0-RTT resumption,
the poolers' certificate verified. SSLRequest is answered N (the local hop is loopback or a socket
file; the WAN hop is QUIC's TLS 1.3). Logins are relayed end to end (SCRAM by default).

Options (each is a [connect] key; precedence: flag > QUICPOOL_CONNECT_KEY env > file > default):
  --config FILE          TOML config file (its [connect] and [log] sections)
  --endpoint HOST:PORT   connect.endpoints   the poolers' QUIC address (repeatable; required)
  --host ADDR            connect.host        (default 127.0.0.1; "" = no TCP)
  --port PORT            connect.port        (default 6433; also the socket's name)
  --socket-dir DIR       connect.socket_dir  (default /tmp; "" = no socket)
  --ca-file FILE         connect.ca_file     CA of the poolers' certificate (default: public roots)
  --server-name NAME     connect.server_name name the certificate must carry
  --cert FILE            connect.cert_file   client certificate (certificate authentication)
  --key FILE             connect.key_file    its private key
  --metrics-port PORT    connect.metrics_port (default 9433)
  --set KEY=VALUE        any key, e.g. --set connect.max_connections=8 (repeatable)

Signals: SIGTERM/SIGINT stop accepting and drain (connect.drain_timeout_ms), a second one stops at once.
`;

const CONNECT_FLAGS: Readonly<Record<string, string>> = {
  host: 'connect.host',
  port: 'connect.port',
  'socket-dir': 'connect.socket_dir',
  'ca-file': 'connect.ca_file',
  'server-name': 'connect.server_name',
  cert: 'connect.cert_file',
  key: 'connect.key_file',
  'metrics-port': 'connect.metrics_port',
};

const NAMED_FLAGS: Readonly<Record<string, string>> = {
  'state-dir': 'embedded.state_dir',
  'pg-port': 'embedded.port',
  host: 'listen.host',
  port: 'listen.port',
  'quic-port': 'listen.quic_port',
  'metrics-port': 'metrics.port',
};

function configFile(given: string | undefined): string | undefined {
  if (given !== undefined) return given;
  const env = process.env['QUICPOOL_CONFIG'];
  if (env !== undefined && env !== '') return env;
  return existsSync('quicpool.toml') ? 'quicpool.toml' : undefined;
}

/** Named flags and `--set KEY=VALUE` as config key -> raw string. */
function flagOverrides(values: { set?: string[] }, named: Readonly<Record<string, string>>): Map<string, string> {
  const flags = new Map<string, string>();
  for (const [flag, key] of Object.entries(named)) {
    const v = (values as Record<string, unknown>)[flag];
    if (typeof v === 'string') flags.set(key, v);
  }
  for (const s of values.set ?? []) {
    const eq = s.indexOf('=');
    if (eq < 1) throw new ConfigFileError('command line', s, 'expected --set KEY=VALUE');
    flags.set(s.slice(0, eq), s.slice(eq + 1));
  }
  return flags;
}

async function start(argv: string[]): Promise<number> {
  const strings = Object.fromEntries(Object.keys(NAMED_FLAGS).map((f) => [f, { type: 'string' as const }]));
  const { values } = parseArgs({
    args: argv,
    options: { ...strings, config: { type: 'string' }, set: { type: 'string', multiple: true }, help: { type: 'boolean' } },
    strict: true,
  });
  if (values.help === true) return void process.stdout.write(START_HELP), EXIT.OK;
  const flags = flagOverrides(values, NAMED_FLAGS);
  const started = performance.now();
  const file = configFile(values.config);
  const overrides = { env: process.env, flags };
  const config = await loadConfig(file, overrides);
  // PostgreSQL starts while the daemon's modules (transport, native QUIC, metrics) load.
  const embedded =
    config.get<string | null>('upstream.host') === null && config.get<readonly string[]>('upstream.hosts').length === 0
      ? import('./embedded.js').then((m) => m.startEmbedded(config.get<string>('embedded.state_dir'), config.get<number>('embedded.port')))
      : undefined;
  embedded?.catch(() => undefined); // reported where it is awaited
  const { runDaemon } = await import('./daemon.js');
  return runDaemon(file, overrides, config, embedded, started);
}

async function connectCommand(argv: string[]): Promise<number> {
  const strings = Object.fromEntries(Object.keys(CONNECT_FLAGS).map((f) => [f, { type: 'string' as const }]));
  const { values } = parseArgs({
    args: argv,
    options: { ...strings, config: { type: 'string' }, endpoint: { type: 'string', multiple: true }, set: { type: 'string', multiple: true }, help: { type: 'boolean' } },
    strict: true,
  });
  if (values.help === true) return void process.stdout.write(CONNECT_HELP), EXIT.OK;
  const flags = flagOverrides(values, CONNECT_FLAGS);
  if (values.endpoint !== undefined) flags.set('connect.endpoints', values.endpoint.join(','));
  const config = await loadConfig(configFile(values.config), { env: process.env, flags });
  const { runConnect } = await import('./connect.js'); // loads the client (native QUIC) only here
  return runConnect(config);
}

async function checkConfig(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options: { help: { type: 'boolean' } }, allowPositionals: true });
  if (values.help === true) return void process.stdout.write(CHECK_HELP), EXIT.OK;
  const file = positionals[0];
  if (file === undefined || positionals.length > 1) {
    process.stderr.write(CHECK_HELP);
    return EXIT.USAGE;
  }
  const c = await loadConfig(file, { env: process.env });
  const upstream = c.get<string | null>('upstream.host');
  // What the engine checks too (auth methods and their secrets, pool limits against each other).
  const [{ resolvePoolerConfig, ConfigError }, { engineErrorKey, toPoolerConfig }, { upstreamTls }, { configuredUpstream }] = await Promise.all([
    import('@quicpool/pooler'),
    import('./config/to-pooler.js'),
    import('./config/upstream-tls.js'),
    import('./config/upstream-hosts.js'),
  ]);
  const tls = await upstreamTls(c, file);
  try {
    resolvePoolerConfig(toPoolerConfig(c, configuredUpstream(c, file, tls), undefined));
  } catch (e) {
    if (e instanceof ConfigError) throw new ConfigFileError(file, ...engineErrorKey(e.message));
    throw e;
  }
  const hosts = c.get<readonly string[]>('upstream.hosts');
  const where = hosts.length > 0 ? `upstream ${hosts.join(', ')}` : upstream === null ? 'embedded PostgreSQL' : `upstream ${upstream}:${c.get<number>('upstream.port')}`;
  process.stdout.write(`${file}: OK (${where}, ${c.users.size} user(s))\n`);
  return EXIT.OK;
}

async function cert(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { out: { type: 'string', default: '.quicpool/certs' }, name: { type: 'string', multiple: true }, help: { type: 'boolean' } } });
  if (values.help === true) return void process.stdout.write(CERT_HELP), EXIT.OK;
  const names = values.name ?? ['localhost', '127.0.0.1', '::1'];
  const { devCertificates } = await import('./certs.js'); // loads the transport (native QUIC) only here
  const c = await devCertificates(values.out, names, true);
  process.stdout.write(
    `CA:          ${c.caPath ?? ''}\nCertificate: ${values.out}/server.pem\nKey:         ${values.out}/server.key\nNames:       ${names.join(', ')}\nFingerprint (SHA-256): ${c.fingerprint}\n`,
  );
  return EXIT.OK;
}

/**
 * "quicpool 0.2.0 (Node.js v20.20.2, node flags: --initial-old-space-size=64 ...)", then the
 * transport's fast paths and whether each is on with this Node ("fast paths: tcpDirectWrite on, ..."),
 * and the pooler's plain lane (packages/pooler/src/driver/plain-lane.md).
 */
async function versionLines(): Promise<string> {
  const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version?: string };
  const flags = process.execArgv.length > 0 ? process.execArgv.join(' ') : 'none';
  const { fastPathsLine } = await import('@quicpool/transport');
  const { plainLaneLine } = await import('@quicpool/pooler');
  return `quicpool ${manifest.version ?? '(unknown version)'} (Node.js ${process.version}, node flags: ${flags})\nfast paths: ${fastPathsLine()}, ${plainLaneLine()}`;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'start':
      return start(rest);
    case 'check-config':
      return checkConfig(rest);
    case 'cert':
      return cert(rest);
    case 'connect':
      return connectCommand(rest);
    case 'config-reference':
      process.stdout.write(configReference());
      return EXIT.OK;
    case '--version':
    case '-V':
      process.stdout.write(`${await versionLines()}\n`);
      return EXIT.OK;
    case undefined:
    case '--help':
    case '-h':
    case 'help':
      process.stdout.write(HELP);
      return command === undefined ? EXIT.USAGE : EXIT.OK;
    default:
      process.stderr.write(`quicpool: unknown command '${command}'\n\n${HELP}`);
      return EXIT.USAGE;
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    const usage = err instanceof ConfigFileError || (err instanceof Error && err.name === 'ConfigError') || (err instanceof Error && 'code' in err && String(err.code).startsWith('ERR_PARSE_ARGS'));
    process.stderr.write(`quicpool: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(usage ? EXIT.USAGE : EXIT.FAILURE);
  },
);
