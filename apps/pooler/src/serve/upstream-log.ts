// The log lines of the pooler's server logins, the same in the main thread and in every worker:
// one warn line when a pool's server becomes unreachable or refuses logins (with the reason), one
// info line when logins succeed again (with the outage's length), one when a pool moves to another
// host. Single failed logins are debug (the counters have them all).
import type { UpstreamEvent } from '@quicpool/pooler';
import type { Logger } from '../logger.js';

export function logUpstreamEvent(log: Logger, e: UpstreamEvent): void {
  const pool = { database: e.database, user: e.user };
  switch (e.type) {
    case 'loginFailed':
      if (e.passes) return log.debug({ ...pool, server: e.server, reason: e.reason, error: e.message }, 'server login failed, retrying');
      return log.warn({ ...pool, server: e.server, reason: e.reason, error: e.message }, 'server login failed');
    case 'serverDown':
      return log.warn({ ...pool, server: e.server, reason: e.reason, error: e.message }, 'server unreachable or refusing logins: clients wait');
    case 'serverUp':
      return log.info({ ...pool, server: e.server, outageMs: e.outageMs }, 'server logins succeed again');
    case 'hostChanged':
      return log.info({ ...pool, from: e.from, to: e.to, why: e.why }, 'pool moved to another server host');
    default: {
      const never: never = e;
      throw new Error(`unknown upstream event ${JSON.stringify(never)}`);
    }
  }
}
