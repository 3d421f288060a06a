// The real quicpool daemon, started as a user starts it: `quicpool start --config <file>` with a
// generated TOML file (docs/config.md), its own process, its own development certificate and
// QUIC ticket key in a state folder (kept across starts, so 0-RTT tickets stay valid). Every
// benchmark that needs a pooler starts it here, so what is measured is the deployable, not a
// pooler the bench assembled from the packages.
import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { delimiter, dirname, join } from 'node:path';
import { startWorkerProcess } from '../process/worker-process.js';

export type TomlValue = string | number | boolean | readonly string[];

export interface DaemonOptions {
  /** Where the TCP and QUIC listeners bind (ports are chosen by the system). */
  readonly listenHost: string;
  /** The server, or several (upstream.hosts: the pool picks one by upstream.target_session_attrs). */
  readonly upstream: { readonly host: string; readonly port: number } | { readonly hosts: readonly { readonly host: string; readonly port: number }[] };
  /** By name: a password (SCRAM-SHA-256 by default, also the server login), trust, or cert (`certCommonNames`: the CNs that may log in). */
  readonly users: Readonly<Record<string, { password?: string; auth?: 'scram-sha-256' | 'trust' | 'cert'; certCommonNames?: readonly string[] }>>;
  readonly poolSize: number;
  /** Config file, certificate and ticket key live here (created when missing). */
  readonly stateDir: string;
  /** Users allowed into the admin console (SHOW ...). */
  readonly adminUsers?: readonly string[];
  /** More keys, by section (e.g. { quic: { idle_timeout_ms: 5000 } }). */
  readonly settings?: Readonly<Record<string, Readonly<Record<string, TomlValue>>>>;
  /** Node flags for the daemon (e.g. --cpu-prof). */
  readonly nodeFlags?: readonly string[];
  /** Another build's CLI (its dist/cli.js) instead of this workspace's. */
  readonly cli?: string;
  /**
   * workers.count. Default 1 (the daemon's own default is one per core): every benchmark measures
   * one worker unless it asks for more. Left out for another build's CLI unless given.
   */
  readonly workers?: number;
  /** A network namespace to run in (`ip netns exec`: the packet path's server side), or null/absent for the host's. */
  readonly namespace?: string | null;
}

export type RunningDaemon = Awaited<ReturnType<typeof startDaemon>>;

/** The `quicpool` command of this workspace (apps/pooler's bin script; its dist/cli.js built by `pnpm build`). */
export function daemonCli(): string {
  const require = createRequire(import.meta.url);
  const manifest = require.resolve('quicpool/package.json');
  const pkg = JSON.parse(readFileSync(manifest, 'utf8')) as { bin?: Record<string, string> };
  const bin = pkg.bin?.quicpool;
  if (bin === undefined) throw new Error(`${manifest} declares no quicpool bin`);
  const built = join(dirname(manifest), 'dist', 'cli.js');
  if (!existsSync(built)) throw new Error(`${built} is missing: build the daemon first (pnpm build)`);
  return join(dirname(manifest), bin);
}

const quote = (v: string): string => JSON.stringify(v); // a TOML basic string is a JSON string

function toml(value: TomlValue): string {
  if (typeof value === 'string') return quote(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return `[${value.map(quote).join(', ')}]`;
}

/** The config file's text: what `quicpool start` reads. */
export function daemonConfig(o: DaemonOptions): string {
  const sections: Record<string, Record<string, TomlValue>> = {
    upstream: 'hosts' in o.upstream ? { hosts: o.upstream.hosts.map((h) => `${h.host}:${h.port}`) } : { host: o.upstream.host, port: o.upstream.port },
    listen: { host: o.listenHost, port: 0, quic_port: 0 },
    embedded: { state_dir: o.stateDir },
    pool: { mode: 'transaction', size: o.poolSize },
    // Thousands of sessions in `fair`; the default would refuse the last ones.
    limits: { max_client_connections: 20_000 },
    admin: { users: [...(o.adminUsers ?? [])] },
    // One daemon at a time per run, but other programs may hold the default metrics port.
    metrics: { enabled: false },
    // Per-session info lines would cost the daemon CPU inside the measurement.
    log: { level: 'warn', format: 'json' },
    shutdown: { drain_timeout_ms: 2_000 },
  };
  const workers = o.workers ?? (o.cli === undefined ? 1 : undefined);
  if (workers !== undefined) sections['workers'] = { count: workers };
  for (const [section, keys] of Object.entries(o.settings ?? {})) sections[section] = { ...sections[section], ...keys };
  for (const [name, user] of Object.entries(o.users)) {
    const keys = Object.entries({ password: user.password, auth: user.auth, cert_common_names: user.certCommonNames });
    sections[`users.${quote(name)}`] = Object.fromEntries(keys.filter((key): key is [string, string | readonly string[]] => key[1] !== undefined));
  }
  const lines: string[] = ['# Generated by @quicpool/bench for one benchmark run.'];
  for (const [section, keys] of Object.entries(sections)) {
    lines.push('', `[${section}]`, ...Object.entries(keys).map(([k, v]) => `${k} = ${toml(v)}`));
  }
  return `${lines.join('\n')}\n`;
}

/** "Listening: tcp 10.201.3.1:43459, quic (udp) 10.201.3.1:45040" from its banner (QUIC may be off: null). */
export function parseListening(line: string): { host: string; tcpPort: number; quicPort: number | null } | null {
  const m = /^Listening: tcp (.+?):(\d+)(?:, quic \(udp\) .+:(\d+))?$/.exec(line.trim());
  if (m === null) return null;
  return { host: m[1] ?? '', tcpPort: Number(m[2]), quicPort: m[3] === undefined ? null : Number(m[3]) };
}

export async function startDaemon(o: DaemonOptions) {
  mkdirSync(o.stateDir, { recursive: true, mode: 0o700 });
  const configFile = join(o.stateDir, 'quicpool.toml');
  writeFileSync(configFile, daemonConfig(o), { mode: 0o600 });
  const flags = o.nodeFlags ?? [];
  const start = ['start', '--config', configFile];
  // This workspace's daemon runs as `quicpool` does once installed (bin/quicpool: the daemon's V8
  // settings, the `node` on PATH, which we make ours), extra node flags through QUICPOOL_NODE_FLAGS; another
  // build's dist/cli.js runs under this node with the flags on its command line.
  const argv = o.cli === undefined ? [daemonCli(), ...start] : [process.execPath, ...flags, o.cli, ...start];
  const env = o.cli !== undefined ? process.env : {
    ...process.env,
    PATH: [dirname(process.execPath), process.env.PATH ?? ''].join(delimiter),
    ...(flags.length > 0 ? { QUICPOOL_NODE_FLAGS: flags.join(' ') } : {}),
  };
  // The daemon does not watch its stdin: where setpriv exists, the kernel ends it if we die (even by SIGKILL).
  const pdeath = existsSync('/usr/bin/setpriv') ? ['/usr/bin/setpriv', '--pdeathsig', 'SIGTERM', '--'] : [];
  // `ip netns exec` enters the namespace and execs the daemon: the same process, the same pid.
  const netns = o.namespace === undefined || o.namespace === null ? [] : ['ip', 'netns', 'exec', o.namespace];
  const [command = process.execPath, ...args] = [...pdeath, ...netns, ...argv];
  const daemon = await startWorkerProcess({
    name: 'the quicpool daemon',
    command,
    args,
    env,
    startTimeoutMs: 30_000,
    stderr: 'capture',
    ready: parseListening,
    // SIGTERM drains (up to shutdown.drain_timeout_ms); the benchmark's clients have gone by then.
    stopSignal: 'SIGTERM',
  });
  // caPem: the development CA that signed its certificate (server name `localhost`).
  const { caPem } = daemonCertificates(o.stateDir);
  return { pid: daemon.pid, ...daemon.ready, caPem, stop: () => daemon.stop() };
}

/** The development CA, certificate and key the daemon writes into its state folder at its first start. */
export function daemonCertificates(stateDir: string): { caPem: string; certPem: string; keyPem: string } {
  const certs = join(stateDir, 'certs');
  const read = (file: string): string => {
    try {
      return readFileSync(join(certs, file), 'utf8');
    } catch {
      throw new Error(`no development certificate of the daemon in ${certs} (it writes one at its first start)`);
    }
  };
  return { caPem: read('ca.pem'), certPem: read('server.pem'), keyPem: read('server.key') };
}

/** The daemon's QUIC port, for callers that started it with QUIC on (the default). */
export function quicPortOf(d: { readonly quicPort: number | null }): number {
  if (d.quicPort === null) throw new Error('this pooler has no QUIC listener (a daemon started without it, or PgBouncer)');
  return d.quicPort;
}
