// `quicpool start`: config -> (embedded PostgreSQL) -> certificate -> pooler + TCP/QUIC listeners
// -> admin console -> metrics -> signals. Holds no pooling logic: it assembles packages.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { adminDatabase, ConfigError, createAdminCommands, createPooler } from '@quicpool/pooler';
import type { ClientEvent, Pooler, QuicListenerRow } from '@quicpool/pooler';
import { listenTcp, QuicListener } from '@quicpool/transport';
import type { SessionListener } from '@quicpool/transport';
import { devCertificates, loadCertificateFiles, readClientCa } from './certs.js';
import type { ServerCertificate } from './certs.js';
import { ConfigFileError, loadConfig } from './config/load.js';
import type { AppConfig, Overrides, UserSettings } from './config/load.js';
import { applyLive, configRows, engineErrorKey, restartOnlyChanges, toPoolerConfig } from './config/to-pooler.js';
import type { Upstream } from './config/to-pooler.js';
import { upstreamTls } from './config/upstream-tls.js';
import type { EmbeddedStart } from './embedded.js';
import { EXIT } from './exit-codes.js';
import { createLogger } from './logger.js';
import type { Logger } from './logger.js';
import type { LogFormat } from './logger.js';
import { createMetrics, serveMetrics } from './metrics.js';
import { SECOND_SIGNAL_AFTER_MS, stopSignals } from './stop-signals.js';
import { checkUpstream, describeUpstream } from './upstream-check.js';

/**
 * Login events at info, failed logins at warn (info when the client simply went away, as psql does
 * before prompting for a password); connects, admissions and anonymous closes at debug. Fields:
 * transport, client address, database, user and the reason; never a password or secret.
 */
function logClientEvent(log: Logger, e: ClientEvent): void {
  const peer = { transport: e.info.kind, addr: `${e.info.remoteAddress}:${e.info.remotePort}` };
  switch (e.type) {
    case 'connected':
      return log.debug(peer, 'client connected');
    case 'admitted':
      return log.debug({ ...peer, database: e.database, user: e.user }, 'client admitted');
    case 'refused':
      return log.warn({ ...peer, database: e.database, user: e.user, sqlstate: e.sqlstate, reason: e.message }, 'client refused');
    case 'loggedIn':
      return log.info({ ...peer, database: e.database, user: e.user }, 'client logged in');
    case 'loginFailed': {
      const fields = { ...peer, database: e.database, user: e.user, stage: e.stage, sqlstate: e.sqlstate, reason: e.reason };
      return e.sqlstate === null ? log.info(fields, 'client login abandoned') : log.warn(fields, 'client login failed');
    }
    case 'closed':
      if (e.user === '') return log.debug({ ...peer, durationMs: e.durationMs }, 'client closed before login');
      return log.info({ ...peer, database: e.database, user: e.user, durationMs: e.durationMs }, 'client closed');
    default: {
      const never: never = e;
      throw new Error(`unknown client event ${JSON.stringify(never)}`);
    }
  }
}

/** The configured PostgreSQL server cannot be reached at start (exit 1, the message says which). */
export class UpstreamError extends Error {
  override readonly name = 'UpstreamError';
}

interface Stoppable {
  stop(): Promise<void>;
}

async function quicTicketKey(stateDir: string): Promise<Uint8Array> {
  // Stable across restarts so resumed clients keep 0-RTT.
  const path = join(stateDir, 'quic-ticket.key');
  if (existsSync(path)) {
    const key = await readFile(path);
    if (key.length === 48) return key;
  }
  const key = randomBytes(48);
  await mkdir(stateDir, { recursive: true, mode: 0o711 });
  await writeFile(path, key, { mode: 0o600 });
  return key;
}

/**
 * `config` is already loaded and `embeddedStart` (when no upstream is configured) already under
 * way: the CLI starts PostgreSQL while this module and its dependencies load.
 */
export async function runDaemon(file: string | undefined, overrides: Overrides, config: AppConfig, embeddedStart: Promise<EmbeddedStart> | undefined, started: number): Promise<number> {
  const log = createLogger(config.get<string>('log.level'), config.get<LogFormat>('log.format'));
  const stateDir = config.get<string>('embedded.state_dir');

  let upstream: Upstream;
  let embedded: Stoppable | undefined;
  let adminUsers = new Set(config.get<readonly string[]>('admin.users'));
  const upstreamHost = config.get<string | null>('upstream.host');
  if (upstreamHost === null || embeddedStart !== undefined) {
    if (embeddedStart === undefined) throw new Error('no upstream configured and no embedded PostgreSQL started');
    const { server, state } = await embeddedStart;
    embedded = server;
    const users = new Map<string, UserSettings>([[server.info.user, { password: state.password }]]);
    upstream = { host: server.info.host, port: server.info.port, extraUsers: users };
    adminUsers.add(server.info.user);
    log.info({ dataDir: state.dataDir, port: server.info.port, version: server.info.serverVersion }, 'embedded PostgreSQL running');
  } else {
    const tls = await upstreamTls(config, file ?? '(defaults)');
    upstream = { host: upstreamHost, port: config.get<number>('upstream.port'), ...(tls !== undefined ? { tls } : {}) };
    // A wrong host or port is said now, naming the key, not as every client's 08001 later.
    const unreachable = await checkUpstream(upstream, config.get<number>('upstream.connect_timeout_ms'));
    if (unreachable !== null) throw new UpstreamError(`upstream.host/upstream.port: the PostgreSQL server is not reachable: ${unreachable}`);
    log.info({ upstream: describeUpstream(upstream) }, 'upstream PostgreSQL reachable');
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

  let pooler: Pooler;
  try {
    pooler = createPooler(toPoolerConfig(config, upstream, tls));
  } catch (e) {
    await embedded?.stop();
    if (e instanceof ConfigError) throw new ConfigFileError(file ?? '(defaults)', ...engineErrorKey(e.message));
    throw e;
  }
  pooler.events.client.add((e) => logClientEvent(log, e));
  const host = config.get<string>('listen.host');
  const listeners: { name: string; listener: SessionListener }[] = [];
  const quicListeners: { name: string; listener: QuicListener }[] = [];
  const quicRows = (): QuicListenerRow[] =>
    quicListeners.map(({ name, listener }) => {
      const s = listener.stats();
      const h = listener.pathHealth();
      return {
        listener: name, connections: s.connections, streams: s.streams, handshakes: s.handshakes,
        datagramsIn: s.datagramsIn, datagramsOut: s.datagramsOut, datagramsDropped: s.datagramsDropped,
        bytesIn: s.bytesIn, bytesOut: s.bytesOut,
        avgRttMs: h.rttMsAvg === null ? null : Math.round(h.rttMsAvg), maxRttMs: h.rttMsMax,
        packetsSent: h.packetsSent, packetsLost: h.packetsLost,
      };
    });

  let current: AppConfig = config;
  let stopping: Promise<number> | null = null;
  let resolveExit: (code: number) => void = () => undefined;
  const exited = new Promise<number>((r) => (resolveExit = r));

  const reload = async (): Promise<string> => {
    const next = await loadConfig(file, overrides);
    try {
      pooler.reconfigure(toPoolerConfig(next, upstream, tls));
    } catch (e) {
      if (e instanceof ConfigError) throw new ConfigFileError(file ?? '(defaults)', ...engineErrorKey(e.message));
      throw e;
    }
    const restart = restartOnlyChanges(current, next);
    adminUsers = new Set(next.get<readonly string[]>('admin.users'));
    if (embedded !== undefined) for (const u of upstream.extraUsers?.keys() ?? []) adminUsers.add(u);
    log.level = next.get<string>('log.level');
    current = applyLive(current, next);
    const note = restart.length === 0 ? 'everything applied' : `applied; these need a restart and keep their old value: ${restart.join(', ')}`;
    log.info({ file, restartOnly: restart }, `configuration reloaded: ${note}`);
    return note;
  };
  const reloadLogged = (): void => {
    reload().catch((e: unknown) => log.error({ file, err: e instanceof Error ? e.message : String(e) }, 'reload failed, the old configuration stays'));
  };

  // The admin console: a database served in process; admin users log in to it like any database.
  const adminCommands = createAdminCommands({
    pooler,
    quic: quicRows,
    config: () => configRows(current),
    reload,
    shutdown: () => void shutdown('SHUTDOWN'),
    get pauseTimeoutMs() {
      return current.get<number>('admin.pause_timeout_ms');
    },
  });
  pooler.serveDatabase(config.get<string>('admin.database'), adminDatabase(adminCommands, () => adminUsers));

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
      if (immediate) void pooler.close({ graceful: false });
      return stopping;
    }
    stopping = pooler
      .close({ graceful: !immediate, deadlineMs })
      .then(async () => {
        for (const c of cleanup) await c().catch(() => undefined);
        await embedded?.stop();
        log.info('stopped');
        return forced ? EXIT.FORCED : EXIT.OK;
      });
    void stopping.then(resolveExit);
    return stopping;
  };

  try {
    const tcp = await listenTcp({ host, port: config.get<number>('listen.port') });
    listeners.push({ name: 'tcp', listener: tcp });
    if (config.get<boolean>('listen.quic')) {
      const quic = await QuicListener.listen({
        cert: cert.certPem,
        key: cert.keyPem,
        host,
        port: config.get<number>('listen.quic_port'),
        alpn: config.get<readonly string[]>('quic.alpn'),
        idleTimeoutMs: config.get<number>('quic.idle_timeout_ms'),
        maxStreamsPerConnection: config.get<number>('quic.max_streams_per_connection'),
        maxConnections: config.get<number>('quic.max_connections'),
        // 'read-only' is the pooler's policy on accepted early streams (see toPoolerConfig).
        earlyData: config.get<string>('quic.early_data') === 'defer' ? 'defer' : 'accept',
        ticketKey: await quicTicketKey(stateDir),
        ...(clientCa !== undefined ? { clientCa } : {}),
      });
      listeners.push({ name: 'quic', listener: quic });
      quicListeners.push({ name: 'quic', listener: quic });
    }
    for (const l of listeners) pooler.listen(l.listener);
    if (config.get<boolean>('metrics.enabled')) {
      // Ready: listening (we are past that), not shutting down, and the upstream answers a dial.
      const ready = async (): Promise<string | null> =>
        stopping !== null ? 'shutting down' : checkUpstream(upstream, Math.min(2000, current.get<number>('upstream.connect_timeout_ms')));
      const endpoint = await serveMetrics(createMetrics(pooler, quicRows), config.get<string>('metrics.host'), config.get<number>('metrics.port'), ready);
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
  const tcpPort = listeners[0]?.listener.address().port ?? 0;
  const quicPort = quicListeners[0]?.listener.address().port;
  log.info({ tcp: `${host}:${tcpPort}`, quic: quicPort === undefined ? 'off' : `${host}:${quicPort}`, startupMs: ms }, 'quicpool ready');
  printBanner({ embedded: upstream.extraUsers, host, tcpPort, quicPort, cert, adminDb: config.get<string>('admin.database'), ms, upstream: { where: describeUpstream(upstream), user: [...config.users.keys()][0], admin: [...adminUsers][0] } });
  return exited;
}

function printBanner(b: {
  embedded: ReadonlyMap<string, UserSettings> | undefined;
  host: string;
  tcpPort: number;
  quicPort: number | undefined;
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
  const admin = first !== undefined ? auth : login(b.upstream.admin);
  lines.push(`Admin:    psql 'postgresql://${admin}@${connectHost}:${b.tcpPort}/${b.adminDb}' -c 'SHOW POOLS'`);
  lines.push(`Listening: tcp ${connectHost}:${b.tcpPort}${b.quicPort === undefined ? '' : `, quic (udp) ${connectHost}:${b.quicPort}`}`);
  if (b.cert.caPath !== undefined) lines.push(`CA:       ${b.cert.caPath} (development certificate, server name localhost)`);
  lines.push(`Fingerprint (SHA-256): ${b.cert.fingerprint}`, 'Press Ctrl-C to stop (twice: at once).');
  process.stdout.write(`${lines.join('\n')}\n`);
}
