// The log lines of client sessions, the same in the main thread and in every worker.
import type { ClientEvent } from '@quicpool/pooler';
import type { Logger } from '../logger.js';

/**
 * Login events at info; failed logins, protocol violations and failed handshakes at warn (info when the client simply went away, as psql does
 * before prompting for a password); connects, admissions and anonymous closes at debug. Fields:
 * transport, client address, database, user and the reason; never a password or secret.
 */
export function logClientEvent(log: Logger, e: ClientEvent): void {
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
    case 'protocolViolation':
      return log.warn({ ...peer, database: e.database, user: e.user, sqlstate: '08P01', reason: e.reason }, 'client protocol violation');
    case 'handshakeFailed':
      return log.warn({ ...peer, reason: e.reason }, 'handshake failed');
    case 'closed':
      if (e.user === '') return log.debug({ ...peer, durationMs: e.durationMs }, 'client closed before login');
      return log.info({ ...peer, database: e.database, user: e.user, durationMs: e.durationMs }, 'client closed');
    default: {
      const never: never = e;
      throw new Error(`unknown client event ${JSON.stringify(never)}`);
    }
  }
}
