// Is the real PostgreSQL server reachable? A dial (TCP, or its unix socket when the host is a
// directory) answered within a deadline, then closed at once. Used at start (a clear error instead
// of a first client's 08001) and by /readyz; a login is not attempted (no user is implied).
import { createConnection } from 'node:net';

export interface UpstreamAddress {
  readonly host: string;
  readonly port: number;
}

/** "host:port" or the socket path. */
export function describeUpstream(u: UpstreamAddress): string {
  return u.host.startsWith('/') ? `${u.host.replace(/\/+$/, '')}/.s.PGSQL.${u.port}` : `${u.host}:${u.port}`;
}

/** Resolves null when the server accepted a connection within `timeoutMs`, else why not. */
export function checkUpstream(u: UpstreamAddress, timeoutMs: number): Promise<string | null> {
  return new Promise((resolve) => {
    const where = describeUpstream(u);
    const socket = u.host.startsWith('/') ? createConnection({ path: where }) : createConnection({ host: u.host, port: u.port });
    const done = (why: string | null): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(why);
    };
    const timer = setTimeout(() => done(`no answer from ${where} within ${timeoutMs} ms`), timeoutMs);
    socket.once('connect', () => done(null));
    socket.once('error', (e: NodeJS.ErrnoException) => done(`cannot reach ${where}: ${e.code ?? e.message}`));
  });
}
