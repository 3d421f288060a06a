// `quicpool connect`: the local agent. Config ([connect], [log]) -> QuicAgent (TCP + unix socket,
// QUIC over a SessionManager) -> metrics -> signals. Holds no forwarding logic: it assembles
// @quicpool/client's QuicAgent.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { QuicAgent } from '@quicpool/client';
import type { AgentEvent, FastStart, LocalChecksOptions, SessionManagerOptions } from '@quicpool/client';
import { ConfigFileError, loadConfig } from './config/load.js';
import type { AppConfig } from './config/load.js';
import { createConnectMetrics } from './connect-metrics.js';
import { FileLoginCache } from './connect-logins.js';
import { FileTicketStore } from './connect-tickets.js';
import { EXIT } from './exit-codes.js';
import { createLogger } from './logger.js';
import type { LogFormat, Logger } from './logger.js';
import { expositionOf, serveMetrics } from './metrics.js';

const SECOND_SIGNAL_AFTER_MS = 300;
const FAST_START: Record<'auto' | 'on' | 'off', FastStart> = { auto: 'auto', on: true, off: false };

function logAgentEvent(log: Logger, e: AgentEvent): void {
  switch (e.type) {
    case 'sessionStarted':
      return log.debug({ peer: e.peer, user: e.user, database: e.database, earlyData: e.early }, 'local session carried');
    case 'sessionEnded':
      return (e.how === 'clean' ? log.debug.bind(log) : log.info.bind(log))({ peer: e.peer, user: e.user, database: e.database, how: e.how, durationMs: e.durationMs }, 'local session ended');
    case 'refused':
      return log.warn({ peer: e.peer, user: e.user, sqlstate: e.sqlstate, reason: e.reason }, 'local session refused');
    case 'cancel':
      return log.debug({ peer: e.peer }, 'cancel request carried');
    default: {
      const never: never = e;
      throw new Error(`unknown agent event ${JSON.stringify(never)}`);
    }
  }
}

/** [connect] as the client's options; every file named must exist now. */
export async function connectOptions(c: AppConfig): Promise<{ sessions: SessionManagerOptions; socketMode: number; localChecks: LocalChecksOptions }> {
  const source = c.file ?? '(defaults)';
  const base = c.file === undefined ? process.cwd() : dirname(resolve(c.file));
  const endpoints = c.get<readonly string[]>('connect.endpoints');
  if (endpoints.length === 0) throw new ConfigFileError(source, 'connect.endpoints', 'name at least one pooler (host:port of its QUIC listener), e.g. --endpoint db-pooler.internal:6432');
  const modeText = c.get<string>('connect.socket_mode');
  if (!/^0?[0-7]{3}$/.test(modeText)) throw new ConfigFileError(source, 'connect.socket_mode', `expected octal permission bits like "0777", got ${JSON.stringify(modeText)}`);
  const file = async (key: 'connect.ca_file' | 'connect.cert_file' | 'connect.key_file'): Promise<string | undefined> => {
    const v = c.get<string | null>(key);
    if (v === null || v === '') return undefined;
    const path = resolve(base, v);
    if (!existsSync(path)) throw new ConfigFileError(source, key, `file not found: ${path}`);
    return readFile(path, 'utf8');
  };
  const ca = await file('connect.ca_file');
  const cert = await file('connect.cert_file');
  const key = await file('connect.key_file');
  if ((cert === undefined) !== (key === undefined)) throw new ConfigFileError(source, 'connect.key_file', 'connect.cert_file and connect.key_file go together');
  const serverName = c.get<string | null>('connect.server_name');
  const fingerprint = c.get<string | null>('connect.pinned_fingerprint');
  const ticketFile = c.get<string>('connect.ticket_file');
  const sessions: SessionManagerOptions = {
    endpoints,
    maxConnections: c.get<number>('connect.max_connections'),
    streamsPerConnection: c.get<number>('connect.streams_per_connection'),
    minConnections: c.get<number>('connect.min_connections'),
    connectTimeoutMs: c.get<number>('connect.connect_timeout_ms'),
    idleTimeoutMs: c.get<number>('connect.idle_timeout_ms'),
    earlyData: c.get<boolean>('connect.early_data'),
    quic: { alpn: c.get<readonly string[]>('connect.alpn') },
    ...(ca !== undefined ? { ca } : {}),
    // Certificate authentication: the poolers map this certificate to the users it may log in as.
    ...(cert !== undefined && key !== undefined ? { cert, key } : {}),
    ...(serverName !== null ? { serverName } : {}),
    ...(fingerprint !== null ? { pinnedFingerprint: fingerprint } : {}),
    ...(c.get<boolean>('connect.dangerously_accept_any_certificate') ? { dangerouslyAcceptAnyCertificate: true } : {}),
    ...(ticketFile !== '' ? { tickets: new FileTicketStore(resolve(ticketFile)) } : {}),
  };
  const socketCheck = c.get<'pooler' | 'peer' | 'password'>('connect.socket_auth');
  const tcpCheck = c.get<'pooler' | 'password'>('connect.tcp_auth');
  const passwords = new Map<string, string>();
  const usersFile = c.get<string | null>('connect.users_file');
  if (usersFile !== null) {
    const path = resolve(base, usersFile);
    if (!existsSync(path)) throw new ConfigFileError(source, 'connect.users_file', `file not found: ${path}`);
    for (const [name, u] of (await loadConfig(path)).users) {
      const secret = u.scram_secret ?? u.password;
      if (secret === undefined) throw new ConfigFileError(path, `users.${name}`, 'needs password or scram_secret');
      passwords.set(name, secret);
    }
  }
  if ((socketCheck === 'password' || tcpCheck === 'password') && passwords.size === 0) {
    throw new ConfigFileError(source, 'connect.users_file', 'the "password" local check needs a users file with at least one user');
  }
  return { sessions, socketMode: parseInt(modeText, 8), localChecks: { socket: socketCheck, tcp: tcpCheck, passwords } };
}

export async function runConnect(config: AppConfig): Promise<number> {
  const log = createLogger(config.get<string>('log.level'), config.get<LogFormat>('log.format'));
  const { sessions, socketMode, localChecks } = await connectOptions(config);
  const host = config.get<string>('connect.host');
  const socketDir = config.get<string>('connect.socket_dir');
  const loginCacheFile = config.get<string>('connect.login_cache_file');
  let agent: QuicAgent;
  try {
    agent = new QuicAgent({
      sessions,
      host: host === '' ? null : host,
      port: config.get<number>('connect.port'),
      socketDir: socketDir === '' ? null : socketDir,
      socketMode,
      maxWaiting: config.get<number>('connect.max_waiting'),
      queueTimeoutMs: config.get<number>('connect.queue_timeout_ms'),
      localChecks,
      fastStart: FAST_START[config.get<'auto' | 'on' | 'off'>('connect.fast_start')],
      ...(loginCacheFile !== '' ? { loginCache: new FileLoginCache(resolve(loginCacheFile)) } : {}),
    });
  } catch (e) {
    if (e instanceof RangeError) throw new ConfigFileError(config.file ?? '(defaults)', 'connect', e.message);
    throw e;
  }
  agent.on('event', (e) => logAgentEvent(log, e));
  if (localChecks.socket === 'peer' && agent.peerCheck.via === 'socket permissions') {
    log.warn({ reason: agent.peerCheck.reason }, 'no SO_PEERCRED (native module missing): the socket is made 0700 and its peer taken to be this OS user');
  }
  agent.sessions.on('connectionOpen', (i) => log.info({ endpoint: i.endpoint, resumed: i.resumed }, 'QUIC connection to the pooler open'));
  agent.sessions.on('connectionLost', (i) => log.warn({ endpoint: i.endpoint, err: i.error.message, streamsInUse: i.streamsInUse }, 'QUIC connection to the pooler lost'));
  agent.sessions.on('endpointDown', (i) => log.warn({ endpoint: i.endpoint, err: i.error.message, retryInMs: i.retryInMs }, 'pooler unreachable, skipped for a while'));
  agent.sessions.on('endpointUp', (i) => log.info({ endpoint: i.endpoint }, 'pooler reachable again'));

  const cleanup: (() => Promise<void>)[] = [];
  let stopping: Promise<number> | null = null;
  try {
    const a = await agent.listen();
    if (config.get<boolean>('connect.metrics')) {
      // Ready (GET /readyz 200) once a QUIC connection to a pooler is open and until draining starts.
      const ready = (): Promise<string | null> => Promise.resolve(
        stopping !== null ? 'draining' : agent.sessions.stats().connections > 0 ? null : 'no QUIC connection to a pooler is open',
      );
      const m = await serveMetrics(expositionOf(createConnectMetrics(agent)), config.get<string>('connect.metrics_host'), config.get<number>('connect.metrics_port'), ready);
      cleanup.push(() => m.close());
      log.info({ url: `http://${config.get<string>('connect.metrics_host')}:${m.port}/metrics`, health: '/healthz', ready: '/readyz' }, 'metrics endpoint');
    }
    log.info({ tcp: a.tcp === null ? 'off' : `${a.tcp.host}:${a.tcp.port}`, socket: a.socket ?? 'off', poolers: sessions.endpoints }, 'quicpool connect ready');
    const lines = [
      `quicpool connect: local Postgres clients -> QUIC -> ${sessions.endpoints.join(', ')}`,
      ...(a.tcp !== null ? [`TCP:    psql -h ${a.tcp.host} -p ${a.tcp.port} ...`] : []),
      ...(a.socket !== null ? [`Socket: ${a.socket}  (psql -h ${dirname(a.socket)} -p ${a.socket.slice(a.socket.lastIndexOf('.') + 1)} ...)`] : []),
      'Press Ctrl-C to stop (twice: at once).',
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  } catch (e) {
    log.error({ err: e instanceof Error ? e.message : String(e) }, 'startup failed');
    await agent.close({ timeoutMs: 0 });
    throw e;
  }
  // Open min_connections now, so the first local session finds a connection; an unreachable
  // pooler is not fatal here: sessions get 08001 until it is back.
  if (agent.sessions.options.minConnections > 0) {
    agent.sessions.warm().catch((e: unknown) => log.warn({ err: e instanceof Error ? e.message : String(e) }, 'no pooler reachable yet'));
  }

  const drainMs = config.get<number>('connect.drain_timeout_ms');
  let forced = false;
  const stop = (reason: string, immediate: boolean): Promise<number> => {
    if (immediate) {
      forced = true;
      setTimeout(() => process.exit(EXIT.FORCED), 2_000).unref();
      void agent.close({ timeoutMs: 0 });
    }
    stopping ??= agent.close({ timeoutMs: drainMs }).then(async () => {
      for (const c of cleanup) await c().catch(() => undefined);
      log.info('stopped');
      return forced ? EXIT.FORCED : EXIT.OK;
    });
    // Logged once close() has run its synchronous part: the listeners no longer accept by now.
    log.info({ reason, deadlineMs: drainMs }, immediate ? 'stopping at once' : 'draining local sessions');
    return stopping;
  };
  return new Promise<number>((resolveExit) => {
    let firstSignalAt: number | null = null;
    const onStop = (signal: NodeJS.Signals): void => {
      const now = Date.now();
      if (firstSignalAt === null) {
        firstSignalAt = now;
        void stop(signal, false).then(resolveExit);
      } else if (now - firstSignalAt >= SECOND_SIGNAL_AFTER_MS) {
        void stop(signal, true).then(resolveExit);
      }
    };
    process.on('SIGTERM', onStop);
    process.on('SIGINT', onStop);
  });
}
