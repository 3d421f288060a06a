// `quicpool start`: config -> (embedded PostgreSQL) -> certificate -> the pooler, in the main
// thread or as worker threads (serve/, workers/) -> metrics -> signals. Holds no pooling logic: it
// assembles packages and answers for the daemon (RELOAD, SHUTDOWN, SHOW CONFIG).
import { join } from 'node:path';
import { ConfigError, MAX_WORKERS, plainLaneLine, resolvePoolerConfig } from '@quicpool/pooler';
import type { ConfigRow, PoolerConfig } from '@quicpool/pooler';
import { fastPathsLine } from '@quicpool/transport';
import { devCertificates, loadCertificateFiles, readClientCa } from './certs.js';
import type { ServerCertificate } from './certs.js';
import { ConfigFileError, loadConfig } from './config/load.js';
import type { AppConfig, Overrides, UserSettings } from './config/load.js';
import { applyLive, configRows, engineErrorKey, restartOnlyChanges, toPoolerConfig } from './config/to-pooler.js';
import type { Upstream } from './config/to-pooler.js';
import { upstreamTls } from './config/upstream-tls.js';
import { configuredUpstream } from './config/upstream-hosts.js';
import { CONNECT_KEYS } from './config/connect-schema.js';
import type { EmbeddedStart } from './embedded.js';
import { EXIT } from './exit-codes.js';
import { createLogger } from './logger.js';
import type { LogFormat } from './logger.js';
import { serveMetrics } from './metrics.js';
import { serveInProcess } from './serve/in-process.js';
import { quicKeys } from './serve/keys.js';
import type { DaemonHooks, Serving, ServeOptions, WorkerLayout } from './serve/serving.js';
import { SECOND_SIGNAL_AFTER_MS, stopSignals } from './stop-signals.js';
import { checkUpstream, describeUpstream } from './upstream-check.js';
import type { UpstreamAddress } from './upstream-check.js';
import { planWorkers } from './workers/plan.js';

/** The configured PostgreSQL server cannot be reached at start (exit 1, the message says which). */
/** Null when one of `hosts` accepts a connection, else why none does. */
async function anyReachable(hosts: readonly UpstreamAddress[], timeoutMs: number): Promise<string | null> {
  const why = await Promise.all(hosts.map((h) => checkUpstream(h, timeoutMs)));
  return why.some((w) => w === null) ? null : why.join('; ');
}

export class UpstreamError extends Error {
  override readonly name = 'UpstreamError';
}

interface Stoppable {
  stop(): Promise<void>;
}

/**
 * `config` is already loaded and `embeddedStart` (when no upstream is configured) already under
 * way: the CLI starts PostgreSQL while this module and its dependencies load.
 */
export async function runDaemon(file: string | undefined, overrides: Overrides, config: AppConfig, embeddedStart: Promise<EmbeddedStart> | undefined, started: number): Promise<number> {
  const log = createLogger(config.get<string>('log.level'), config.get<LogFormat>('log.format'));
  const stateDir = config.get<string>('embedded.state_dir');
  const configured = config.get<number>('workers.count');
  if (configured > MAX_WORKERS) throw new ConfigFileError(file ?? '(defaults)', 'workers.count', `at most ${MAX_WORKERS} (0 = one per core), got ${configured}`);

  let upstream: Upstream;
  let embedded: Stoppable | undefined;
  let adminUsers = new Set(config.get<readonly string[]>('admin.users'));
  const upstreamHost = config.get<string | null>('upstream.host');
  if (embeddedStart !== undefined || upstreamHost === null && config.get<readonly string[]>('upstream.hosts').length === 0) {
    if (embeddedStart === undefined) throw new Error('no upstream configured and no embedded PostgreSQL started');
    const { server, state } = await embeddedStart;
    embedded = server;
    const users = new Map<string, UserSettings>([[server.info.user, { password: state.password }]]);
    upstream = { host: server.info.host, port: server.info.port, extraUsers: users };
    adminUsers.add(server.info.user);
    log.info({ dataDir: state.dataDir, port: server.info.port, version: server.info.serverVersion }, 'embedded PostgreSQL running');
  } else {
    const tls = await upstreamTls(config, file ?? '(defaults)');
    upstream = configuredUpstream(config, file ?? '(defaults)', tls);
    // A wrong host or port is said now, naming the key, not as every client's 08001 later. Of
    // several hosts one must answer (the others may be down: that is why there are several).
    const hosts = upstream.hosts ?? [upstream];
    const unreachable = await Promise.all(hosts.map((h) => checkUpstream(h, config.get<number>('upstream.connect_timeout_ms'))));
    if (unreachable.every((u) => u !== null)) {
      const key = upstream.hosts === undefined ? 'upstream.host/upstream.port' : 'upstream.hosts';
      throw new UpstreamError(`${key}: the PostgreSQL server is not reachable: ${unreachable.join('; ')}`);
    }
    hosts.forEach((h, i) => {
      const why = unreachable[i];
      if (why === null) log.info({ upstream: describeUpstream(h) }, 'upstream PostgreSQL reachable');
      else log.warn({ upstream: describeUpstream(h), reason: why }, 'upstream PostgreSQL host not reachable now');
    });
  }

  const certFile = config.get<string | null>('tls.cert_file');
  const keyFile = config.get<string | null>('tls.key_file');
  const cert: ServerCertificate =
    certFile !== null && keyFile !== null
      ? await loadCertificateFiles(certFile, keyFile)
      : await devCertificates(join(stateDir, 'certs'), config.get<readonly string[]>('tls.server_names'));
  const clientCaFile = config.get<string | null>('tls.client_ca_file');
  const clientCa = clientCaFile === null ? undefined : await readClientCa(file ?? '(defaults)', clientCaFile);
  // Client certificates over TLS: asked for, checked against the client CA; a client without a
  // valid one still connects (its session has no certificate: password users are unaffected).
  const clientCerts = clientCa === undefined ? {} : { ca: clientCa, requestCert: true, rejectUnauthorized: false };
  const tls = config.get<boolean>('listen.tls') ? { cert: cert.certPem, key: cert.keyPem, ...clientCerts } : undefined;

  const poolerConfig = (c: AppConfig): PoolerConfig => {
    try {
      return checkedPoolerConfig(toPoolerConfig(c, upstream, tls));
    } catch (e) {
      if (e instanceof ConfigError) throw new ConfigFileError(file ?? '(defaults)', ...engineErrorKey(e.message));
      throw e;
    }
  };
  let pooler: PoolerConfig;
  try {
    pooler = poolerConfig(config);
  } catch (e) {
    await embedded?.stop();
    throw e;
  }

  let current: AppConfig = config;
  let serving: Serving | null = null;
  let stopping: Promise<number> | null = null;
  let resolveExit: (code: number) => void = () => undefined;
  const exited = new Promise<number>((r) => (resolveExit = r));

  const reload = async (): Promise<string> => {
    const next = await loadConfig(file, overrides);
    const nextPooler = poolerConfig(next);
    const nextAdmins = new Set(next.get<readonly string[]>('admin.users'));
    if (embedded !== undefined) for (const u of upstream.extraUsers?.keys() ?? []) nextAdmins.add(u);
    if (serving !== null) await serving.reconfigure(nextPooler, { logLevel: next.get<string>('log.level'), adminUsers: [...nextAdmins] });
    const restart = restartOnlyChanges(current, next);
    adminUsers = nextAdmins;
    log.level = next.get<string>('log.level');
    current = applyLive(current, next);
    const note = restart.length === 0 ? 'everything applied' : `applied; these need a restart and keep their old value: ${restart.join(', ')}`;
    log.info({ file, restartOnly: restart }, `configuration reloaded: ${note}`);
    return note;
  };
  const reloadLogged = (): void => {
    reload().catch((e: unknown) => log.error({ file, err: e instanceof Error ? e.message : String(e) }, 'reload failed, the old configuration stays'));
  };

  const cleanup: (() => Promise<void>)[] = [];
  let forced = false;
  const shutdown = (reason: string, immediate = false): Promise<number> => {
    const deadlineMs = current.get<number>('shutdown.drain_timeout_ms');
    log.info({ reason, deadlineMs }, immediate ? 'stopping at once' : 'draining client sessions');
    if (immediate) {
      forced = true;
      // Whatever still hangs (a stuck upstream) must not keep the process alive.
      setTimeout(() => process.exit(EXIT.FORCED), 5000).unref();
    }
    if (stopping !== null) {
      if (immediate) void serving?.close(false, 0);
      return stopping;
    }
    stopping = (serving?.close(!immediate, deadlineMs) ?? Promise.resolve()).then(async () => {
      for (const c of cleanup) await c().catch(() => undefined);
      await embedded?.stop();
      log.info('stopped');
      return forced ? EXIT.FORCED : EXIT.OK;
    });
    void stopping.then(resolveExit);
    return stopping;
  };

  const hooks: DaemonHooks = {
    config: (): ConfigRow[] => configRows(current),
    reload,
    shutdown: () => void shutdown('SHUTDOWN'),
    pauseTimeoutMs: () => current.get<number>('admin.pause_timeout_ms'),
  };
  const host = config.get<string>('listen.host');
  const options: ServeOptions = {
    pooler,
    host,
    tcpPort: config.get<number>('listen.port'),
    quic: config.get<boolean>('listen.quic')
      ? {
          port: config.get<number>('listen.quic_port'),
          cert: cert.certPem,
          key: cert.keyPem,
          alpn: config.get<readonly string[]>('quic.alpn'),
          idleTimeoutMs: config.get<number>('quic.idle_timeout_ms'),
          maxStreamsPerConnection: config.get<number>('quic.max_streams_per_connection'),
          maxConnections: config.get<number>('quic.max_connections'),
          // 'read-only' is the pooler's policy on accepted early streams (see toPoolerConfig).
          earlyData: config.get<string>('quic.early_data') === 'defer' ? 'defer' : 'accept',
          ...(await quicKeys(stateDir)),
          ...(clientCa !== undefined ? { clientCa } : {}),
        }
      : null,
    adminDatabase: config.get<string>('admin.database'),
    adminUsers: [...adminUsers],
    log: { level: config.get<string>('log.level'), format: config.get<LogFormat>('log.format') },
  };

  try {
    const plan = planWorkers(configured);
    if (plan.note !== null) log.warn({ workers: plan.count }, plan.note);
    serving =
      plan.count === 1
        ? await serveInProcess(options, log, hooks, plan.note)
        : await (await import('./workers/supervisor.js')).serveWithWorkers(options, plan.count, log, hooks, plan.note);
    if (config.get<boolean>('metrics.enabled')) {
      // Ready: listening (we are past that), not shutting down, and the upstream answers a dial.
      const ready = async (): Promise<string | null> =>
        stopping !== null ? 'shutting down' : anyReachable(upstream.hosts ?? [upstream], Math.min(2000, current.get<number>('upstream.connect_timeout_ms')));
      const endpoint = await serveMetrics(serving.metrics, config.get<string>('metrics.host'), config.get<number>('metrics.port'), ready);
      cleanup.push(() => endpoint.close());
      log.info({ url: `http://${config.get<string>('metrics.host')}:${endpoint.port}/metrics` }, 'metrics endpoint');
    }
  } catch (e) {
    log.error({ err: e instanceof Error ? e.message : String(e) }, 'startup failed');
    await shutdown('startup failed', true);
    throw e;
  }

  // The first stop signal drains; a repeat within SECOND_SIGNAL_AFTER_MS is the same Ctrl-C
  // forwarded by a script runner; a later one stops at once (stop-signals.ts).
  const decide = stopSignals();
  const onStop = (signal: NodeJS.Signals): void => {
    const decision = decide(performance.now());
    switch (decision) {
      case 'drain':
        return void shutdown(signal, false);
      case 'stopNow':
        return void shutdown(signal, true);
      case 'ignore':
        log.info({ signal }, `repeated stop signal within ${SECOND_SIGNAL_AFTER_MS} ms ignored (the same Ctrl-C forwarded)`);
        return;
      default: {
        const never: never = decision;
        throw new Error(`unknown stop decision ${String(never)}`);
      }
    }
  };
  process.on('SIGTERM', onStop);
  process.on('SIGINT', onStop);
  process.on('SIGHUP', reloadLogged);

  const ms = Math.round(performance.now() - started);
  const { tcpPort, quicPort, layout } = serving;
  log.info({ tcp: `${host}:${tcpPort}`, quic: quicPort === undefined ? 'off' : `${host}:${quicPort}`, workers: layout.count, quicWorkers: layout.quic, startupMs: ms }, 'quicpool ready');
  printBanner({ embedded: upstream.extraUsers, host, tcpPort, quicPort, layout, cert, adminDb: config.get<string>('admin.database'), ms, upstream: { where: (upstream.hosts ?? [upstream]).map(describeUpstream).join(', '), user: [...config.users.keys()][0], admin: [...adminUsers][0] } });
  return exited;
}

/** The engine's own checks (it throws ConfigError naming the key); the config itself goes on as written. */
function checkedPoolerConfig(c: PoolerConfig): PoolerConfig {
  resolvePoolerConfig(c);
  return c;
}

function printBanner(b: {
  embedded: ReadonlyMap<string, UserSettings> | undefined;
  host: string;
  tcpPort: number;
  quicPort: number | undefined;
  layout: WorkerLayout;
  cert: ServerCertificate;
  adminDb: string;
  ms: number;
  /** Upstream mode: the server, and a configured user and admin user for the example URLs (no password: psql asks). */
  upstream: { where: string; user: string | undefined; admin: string | undefined };
}): void {
  const connectHost = b.host === '0.0.0.0' || b.host === '::' ? '127.0.0.1' : b.host;
  const lines = [`quicpool is ready in ${b.ms} ms.`];
  const first = b.embedded === undefined ? undefined : [...b.embedded.entries()][0];
  // Embedded: the generated superuser with its password. Upstream: a configured user without a
  // password (psql prompts for it; the QUIC client needs it added), and the server served.
  const login = (user: string | undefined): string =>
    user === undefined ? 'USER' : first !== undefined ? `${encodeURIComponent(user)}:${encodeURIComponent(first[1].password ?? '')}` : encodeURIComponent(user);
  const auth = login(first?.[0] ?? b.upstream.user);
  const url = `postgresql://${auth}@${connectHost}:${b.tcpPort}/postgres`;
  if (first === undefined) lines.push(`Upstream: ${b.upstream.where}`);
  lines.push(`Connect:  ${url}`);
  if (b.quicPort !== undefined) {
    // The QUIC client (@quicpool/client) takes the login from the URL and the endpoint, the
    // certificate's name and the CA from `quic`; the options are JSON, so JavaScript as well.
    const quic = { endpoints: [`${connectHost}:${b.quicPort}`], serverName: 'localhost', ...(b.cert.caPath === undefined ? {} : { caFile: b.cert.caPath }) };
    lines.push(`QUIC:     new QuicPool(${JSON.stringify({ connectionString: url, quic })})   // import { QuicPool } from '@quicpool/client'`);
  }
  const agentPort = CONNECT_KEYS.port.default;
  if (b.quicPort !== undefined) {
    // Any other language: the local agent, with what this daemon's certificate needs, as printed.
    const name = b.cert.caPath === undefined ? 'NAME-IN-THE-CERTIFICATE' : 'localhost';
    const ca = b.cert.caPath === undefined ? '' : ` --ca-file ${shellWord(b.cert.caPath)}`;
    lines.push(`Agent:    npm run quicpool -- connect --endpoint ${connectHost}:${b.quicPort} --server-name ${name}${ca}   # then psql 'postgresql://${auth}@127.0.0.1:${String(agentPort)}/postgres'`);
  }
  const admin = first !== undefined ? auth : login(b.upstream.admin);
  lines.push(`Admin:    psql 'postgresql://${admin}@${connectHost}:${b.tcpPort}/${b.adminDb}' -c 'SHOW POOLS'`);
  lines.push(`Listening: tcp ${connectHost}:${b.tcpPort}${b.quicPort === undefined ? '' : `, quic (udp) ${connectHost}:${b.quicPort}`}`);
  const quicWorkers = b.layout.quic === 'off' ? '' : `, QUIC ${b.layout.quic}`;
  lines.push(`Workers:  ${b.layout.count === 1 ? '1 (in the main thread)' : `${b.layout.count} threads on the same ports${quicWorkers}`}; SHOW WORKERS in the admin console${b.layout.note === null ? '' : ` (${b.layout.note})`}`);
  lines.push(`Fast paths: ${fastPathsLine()}, ${plainLaneLine()}`);
  if (b.cert.caPath !== undefined) lines.push(`CA:       ${b.cert.caPath} (development certificate, server name localhost)`);
  lines.push(`Fingerprint (SHA-256): ${b.cert.fingerprint}`, 'Press Ctrl-C to stop (twice: at once).');
  process.stdout.write(`${lines.join('\n')}\n`);
}

/** `s` as one word for a POSIX shell: as it is when it needs no quoting, else single-quoted. */
function shellWord(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replaceAll("'", `'\\''`)}'`;
}
