// The local agent: a TCP listener and a unix socket `.s.PGSQL.<port>` for any Postgres client
// (psql, pgbench, libpq, JDBC, pgx ...), every accepted connection carried as its own QUIC stream
// over a SessionManager (N connections x M streams, host list, failover, 0-RTT resumption,
// certificate verification). It parses only the startup-phase packets it must answer; the rest is
// forwarded raw. `quicpool connect` is this class plus config, logs and metrics.
import { EventEmitter } from 'node:events';
import { chmod, unlink } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import { join } from 'node:path';
import { userInfo } from 'node:os';
import { peerCredentials, peerCredentialsSupport } from '@quicpool/udp';
import { SQLSTATE } from '@quicpool/wire';
import { TransportError } from '@quicpool/transport';
import type { QuicSessionStream } from '@quicpool/transport';
import { SessionManager } from '../session-manager.js';
import { sessionCapacity } from '../options.js';
import { CancelKeys } from './cancel-keys.js';
import { LocalPasswords, osUserName } from './local-auth.js';
import { LoginCache } from './login-cache.js';
import { LocalSession } from './local-session.js';
import type { SessionHost } from './local-session.js';
import { resolveAgentOptions } from './options.js';
import type { AgentOptions, ResolvedAgentOptions } from './options.js';
import { emptyAgentCounters } from './stats.js';
import type { AgentCounters, AgentEvent, AgentEvents, AgentStats, RefusalCode } from './stats.js';

/** Where the agent listens, once `listen()` resolved. */
export interface AgentAddresses {
  readonly tcp: { readonly host: string; readonly port: number } | null;
  /** Path of the socket file. */
  readonly socket: string | null;
}

export class QuicAgent extends EventEmitter<AgentEvents> {
  readonly options: ResolvedAgentOptions;
  readonly sessions: SessionManager;
  private readonly ownsManager: boolean;
  private readonly counters: AgentCounters = emptyAgentCounters();
  private readonly live = new Set<LocalSession>();
  private readonly servers: Server[] = [];
  private readonly sockets = new Set<Socket>();
  private socketPath: string | null = null;
  private tcpAddress: AgentAddresses['tcp'] = null;
  private admitted = 0;
  /** Local sessions that have their QUIC stream. */
  private readonly carriedSessions = new Set<LocalSession>();
  private draining = false;
  private closed: Promise<void> | null = null;
  private idleWaiters: (() => void)[] = [];
  private readonly host: SessionHost;
  private readonly passwords: LocalPasswords | null;
  /** What the pooler answered earlier logins, for fast starts. */
  readonly logins: LoginCache;
  private readonly keys = new CancelKeys();
  /**
   * How the "peer" check learns who is at the other end: SO_PEERCRED through the native module,
   * or, without it, the socket file's permissions (forced to 0700: only the agent's OS user, and
   * root, can connect, so the peer is taken to be the agent's own user).
   */
  readonly peerCheck: { readonly via: 'SO_PEERCRED' } | { readonly via: 'socket permissions'; readonly reason: string };

  constructor(options: AgentOptions) {
    super();
    this.options = resolveAgentOptions(options);
    const o = this.options;
    this.passwords = o.socketCheck === 'password' || o.tcpCheck === 'password' ? new LocalPasswords(options.localChecks?.passwords) : null;
    const support = peerCredentialsSupport();
    this.peerCheck = support.available ? { via: 'SO_PEERCRED' } : { via: 'socket permissions', reason: support.reason };
    this.ownsManager = !(options.sessions instanceof SessionManager);
    this.sessions = options.sessions instanceof SessionManager ? options.sessions : new SessionManager({ ...options.sessions, acquireTimeoutMs: 0 });
    this.logins = options.loginCache ?? new LoginCache();
    this.host = this.sessionHost();
  }

  /** Whether sessions of the unix socket (`unix`) or of TCP fast-start (see options.ts, FastStart). */
  fastStarts(unix: boolean): boolean {
    const mode = this.options.fastStart;
    if (mode !== 'auto') return mode;
    const check = unix ? this.options.socketCheck : this.options.tcpCheck;
    return check !== 'pooler' && this.sessions.presentsCertificate;
  }

  /** Most local sessions at once: every stream of every allowed connection, plus `maxWaiting`. */
  get maxSessions(): number {
    return sessionCapacity(this.sessions.options) + this.options.maxWaiting;
  }

  /** Starts the TCP listener and the unix socket. */
  async listen(): Promise<AgentAddresses> {
    const o = this.options;
    if (o.host !== null) {
      const server = this.server(false);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(o.port, o.host ?? undefined, () => {
          server.off('error', reject);
          resolve();
        });
      });
      const a = server.address();
      if (a !== null && typeof a === 'object') this.tcpAddress = { host: a.address, port: a.port };
    }
    if (o.socketDir !== null) {
      const port = o.socketPort ?? (this.tcpAddress?.port ?? o.port);
      const path = join(o.socketDir, `.s.PGSQL.${port}`);
      await removeStaleSocket(path);
      const server = this.server(true);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(path, () => {
          server.off('error', reject);
          resolve();
        });
      });
      this.socketPath = path;
      const fallback = o.socketCheck === 'peer' && this.peerCheck.via === 'socket permissions';
      await chmod(path, fallback ? 0o700 : o.socketMode);
    }
    return this.addresses();
  }

  addresses(): AgentAddresses {
    return { tcp: this.tcpAddress, socket: this.socketPath };
  }

  stats(): AgentStats {
    return { ...this.counters, refused: { ...this.counters.refused }, active: this.carriedSessions.size, waiting: this.admitted - this.carriedSessions.size, manager: this.sessions.stats() };
  }

  /**
   * Stops accepting, waits up to `timeoutMs` (default 30,000) for the local sessions to end by
   * themselves, then ends the rest (57P01 where a message boundary allows it) and closes the QUIC
   * connections (when the agent created the manager).
   */
  close(options: { timeoutMs?: number } = {}): Promise<void> {
    // A second close with timeoutMs 0 (a second SIGTERM) cuts a drain under way short.
    if (this.closed !== null && options.timeoutMs === 0) for (const w of this.idleWaiters.splice(0)) w();
    this.closed ??= this.drain(options.timeoutMs ?? 30_000);
    return this.closed;
  }

  private async drain(timeoutMs: number): Promise<void> {
    this.draining = true;
    const stopped = Promise.all(this.servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
    // Connections that have not sent a StartupMessage yet are not sessions: let them go now.
    if (this.live.size > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        timer.unref();
        this.idleWaiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    for (const s of [...this.live]) s.terminate('terminating connection: the quicpool agent is shutting down');
    for (const sock of this.sockets) sock.destroy();
    await stopped;
    if (this.socketPath !== null) await unlink(this.socketPath).catch(() => undefined);
    if (this.ownsManager) await this.sessions.close({ graceful: true, timeoutMs: 1_000 });
  }

  private server(unix: boolean): Server {
    const server = createServer({ allowHalfOpen: true, pauseOnConnect: false }, (socket) => this.accept(socket, unix));
    this.servers.push(server);
    return server;
  }

  private accept(socket: Socket, unix: boolean): void {
    this.counters.accepted++;
    socket.setNoDelay(true);
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
    const peer = unix ? 'unix' : `${socket.remoteAddress ?? ''}:${socket.remotePort ?? 0}`;
    this.live.add(new LocalSession(socket, this.host, peer, unix));
  }

  private sessionHost(): SessionHost {
    const agent = this;
    const queueMs = this.options.queueTimeoutMs;
    return {
      counters: this.counters,
      startupTimeoutMs: this.options.startupTimeoutMs,
      admit() {
        if (agent.draining) return { ok: false, sqlstate: SQLSTATE.ADMIN_SHUTDOWN as RefusalCode, reason: 'the quicpool agent is shutting down' };
        if (agent.admitted >= agent.maxSessions) {
          const o = agent.sessions.options;
          return {
            ok: false, sqlstate: SQLSTATE.TOO_MANY_CONNECTIONS as RefusalCode,
            reason: `sorry, too many clients already: the quicpool agent carries at most ${o.maxConnections} connections x ${o.streamsPerConnection} streams and queues ${agent.options.maxWaiting} more`,
          };
        }
        agent.admitted++;
        return { ok: true };
      },
      acquireSession(signal) {
        if (queueMs === 0) return agent.sessions.acquire({ signal });
        const timed = AbortSignal.any([signal, AbortSignal.timeout(queueMs)]);
        return agent.sessions.acquire({ signal: timed });
      },
      acquireCancel: () => this.sessions.acquire({ signal: AbortSignal.timeout(Math.max(queueMs, 1_000)) }),
      carried: (s) => {
        this.carriedSessions.add(s);
      },
      done: (s, admitted) => {
        if (!this.live.delete(s)) return;
        this.carriedSessions.delete(s);
        if (admitted) this.admitted--;
        if (this.live.size === 0) for (const w of this.idleWaiters.splice(0)) w();
      },
      emit: (e: AgentEvent) => {
        this.emit('event', e);
      },
      localCheck: (unix) => (unix ? this.options.socketCheck : this.options.tcpCheck),
      fastStart: (unix) => this.fastStarts(unix),
      logins: this.logins,
      keys: this.keys,
      passwords: this.passwords,
      peerName: async (socket) => {
        const creds = peerCredentials(socket);
        if (creds !== null) return osUserName(creds.uid);
        // No SO_PEERCRED: the socket is 0700, so the peer runs as our own OS user (or root).
        return this.peerCheck.via === 'socket permissions' ? userInfo().username : null;
      },
      acquireFailure: (err: Error) => acquireFailure(err, queueMs, this.draining),
    };
  }
}

function acquireFailure(err: Error, queueMs: number, draining: boolean): { sqlstate: RefusalCode; message: string } {
  if (err.name === 'TimeoutError') {
    return { sqlstate: SQLSTATE.TOO_MANY_CONNECTIONS as RefusalCode, message: `sorry, too many clients already: no QUIC stream to the pooler became free within ${queueMs} ms` };
  }
  if (draining) return { sqlstate: SQLSTATE.ADMIN_SHUTDOWN as RefusalCode, message: 'the quicpool agent is shutting down' };
  if (err instanceof TransportError && err.code === 'ERR_TLS_CERT') {
    const message = /rejected by the peer/.test(err.message)
      ? `quicpool agent: the pooler rejected the agent's client certificate (check that the pooler's tls.client_ca_file trusts its CA): ${err.message}`
      : `quicpool agent: the pooler's certificate did not verify (check the CA file, the server name or the pinned fingerprint): ${err.message}`;
    return { sqlstate: SQLSTATE.SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION as RefusalCode, message };
  }
  return { sqlstate: SQLSTATE.SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION as RefusalCode, message: `quicpool agent: could not connect to the pooler: ${err.message}` };
}

/** A socket file left by an agent that died is removed; one that answers is in use. */
async function removeStaleSocket(path: string): Promise<void> {
  const inUse = await new Promise<boolean>((resolve) => {
    const s = connect(path);
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
  if (inUse) throw Object.assign(new Error(`${path} is in use by another process`), { code: 'EADDRINUSE' });
  await unlink(path).catch(() => undefined);
}

export type { QuicSessionStream };
