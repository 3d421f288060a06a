// Options of the local agent (`quicpool connect`, or `new QuicAgent(...)` in a program), their
// defaults and validation.
import { tmpdir } from 'node:os';
import type { SessionManager } from '../session-manager.js';
import type { SessionManagerOptions } from '../options.js';
import type { LocalCheck, LocalChecksOptions } from './local-auth.js';
import type { LoginCache } from './login-cache.js';

/**
 * Fast start: the agent answers a local client's startup itself (AuthenticationOk, the values the
 * pooler reported for the same StartupMessage last time, a key of its own, ReadyForQuery) and
 * sends the StartupMessage with the client's first query in one flight. 'auto' (the default): on
 * for the listeners whose local check is the agent's own ('peer', 'password') when the agent
 * presents a client certificate: the agent has checked the client and the pooler logs it in on
 * the certificate, so the pooler's answer is known before it comes. Off with the 'pooler' check:
 * there the pooler authenticates, and a login it refuses (a changed password, a user removed)
 * would only be known after the client was told it was in; `true` accepts that (the refusal then
 * comes in place of the first query's answer, as it does when a vouched-for login fails).
 */
export type FastStart = 'auto' | boolean;

export interface AgentOptions {
  /** The QUIC side: a SessionManager of your own (not closed by the agent), or options for one it owns. */
  readonly sessions: SessionManager | SessionManagerOptions;
  /** Address of the local TCP listener; null: no TCP listener. Default '127.0.0.1'. */
  readonly host?: string | null;
  /** Port of the local TCP listener (0: any free port), and the number in the socket's name. Default 6432. */
  readonly port?: number;
  /**
   * Directory of the unix socket `.s.PGSQL.<port>` (so `psql -h DIR -p PORT` works); null: none.
   * Default: the system's temporary directory (/tmp).
   */
  readonly socketDir?: string | null;
  /** The port in the socket's name when `port` is 0 (the TCP port is only known after listening). Default: the TCP port. */
  readonly socketPort?: number;
  /** Permission bits of the socket file (as Postgres' unix_socket_permissions). Default 0o777. */
  readonly socketMode?: number;
  /**
   * Local sessions that may wait for a QUIC stream (all streams of all allowed connections in
   * use, or a connection still handshaking) beyond those carried; the next one gets 53300. Default 100.
   */
  readonly maxWaiting?: number;
  /** Longest wait of a local session for a QUIC stream, then 53300. Default 30,000 ms. */
  readonly queueTimeoutMs?: number;
  /** Longest startup-packet phase of a local client (SSLRequest ... StartupMessage), then 08P01. Default 10,000 ms. */
  readonly startupTimeoutMs?: number;
  /**
   * Checks the agent makes itself, per listener (see local-auth.ts). Default: none ('pooler'),
   * the pooler authenticates every session (SCRAM relayed end to end).
   */
  readonly localChecks?: LocalChecksOptions;
  /** See FastStart. Default 'auto'. */
  readonly fastStart?: FastStart;
  /** What the pooler answered earlier logins (share one, or a file's, across agents). Default: a new one. */
  readonly loginCache?: LoginCache;
}

export interface ResolvedAgentOptions {
  readonly host: string | null;
  readonly port: number;
  readonly socketDir: string | null;
  readonly socketPort: number | null;
  readonly socketMode: number;
  readonly maxWaiting: number;
  readonly queueTimeoutMs: number;
  readonly startupTimeoutMs: number;
  readonly socketCheck: LocalCheck;
  readonly tcpCheck: Exclude<LocalCheck, 'peer'>;
  readonly fastStart: FastStart;
}

export const DEFAULT_AGENT_OPTIONS: ResolvedAgentOptions = {
  host: '127.0.0.1',
  port: 6432,
  socketDir: tmpdir(),
  socketPort: null,
  socketMode: 0o777,
  maxWaiting: 100,
  queueTimeoutMs: 30_000,
  startupTimeoutMs: 10_000,
  socketCheck: 'pooler',
  tcpCheck: 'pooler',
  fastStart: 'auto',
};

export function resolveAgentOptions(o: AgentOptions): ResolvedAgentOptions {
  const d = DEFAULT_AGENT_OPTIONS;
  const r: ResolvedAgentOptions = {
    host: o.host === undefined ? d.host : o.host,
    port: o.port ?? d.port,
    socketDir: o.socketDir === undefined ? d.socketDir : o.socketDir,
    socketPort: o.socketPort ?? d.socketPort,
    socketMode: o.socketMode ?? d.socketMode,
    maxWaiting: o.maxWaiting ?? d.maxWaiting,
    queueTimeoutMs: o.queueTimeoutMs ?? d.queueTimeoutMs,
    startupTimeoutMs: o.startupTimeoutMs ?? d.startupTimeoutMs,
    socketCheck: o.localChecks?.socket ?? d.socketCheck,
    tcpCheck: o.localChecks?.tcp ?? d.tcpCheck,
    fastStart: o.fastStart ?? d.fastStart,
  };
  const checks: readonly string[] = [r.socketCheck, r.tcpCheck];
  if (checks.includes('password')) {
    const p = o.localChecks?.passwords;
    const n = p === undefined ? 0 : p instanceof Map ? p.size : Object.keys(p).length;
    if (n === 0) throw new RangeError('the "password" local check needs a local password list (localChecks.passwords)');
  }
  if ((r.tcpCheck as string) === 'peer') throw new RangeError('the "peer" check is for the unix socket only (TCP has no peer credentials)');
  if (r.host === null && r.socketDir === null) throw new RangeError('the agent needs a TCP host or a socket directory to listen on');
  if (!Number.isInteger(r.port) || r.port < 0 || r.port > 65535) throw new RangeError(`port must be 0-65535, got ${r.port}`);
  if (r.socketPort !== null && (!Number.isInteger(r.socketPort) || r.socketPort < 1 || r.socketPort > 65535)) {
    throw new RangeError(`socketPort must be 1-65535, got ${r.socketPort}`);
  }
  if (r.socketDir !== null && r.port === 0 && r.host === null && r.socketPort === null) {
    throw new RangeError('a unix socket needs a port number for its name: set port or socketPort');
  }
  if (!Number.isInteger(r.socketMode) || r.socketMode < 0 || r.socketMode > 0o777) throw new RangeError('socketMode must be 0-0o777');
  for (const key of ['maxWaiting', 'queueTimeoutMs', 'startupTimeoutMs'] as const) {
    const v = r[key];
    if (!Number.isInteger(v) || v < 0) throw new RangeError(`${key} must be a whole number >= 0, got ${v}`);
  }
  return r;
}
