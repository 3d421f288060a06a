// postgres.js over QUIC session streams. postgres.js 3.4 accepts `socket: (options) => socket |
// Promise<socket>`: it attaches its listeners, writes the StartupMessage at once (no 'connect'
// wait when `socket` is given), and on end() writes Terminate only if `socket.readyState ===
// 'open'` - a net.Socket property a Duplex lacks, so the stream gets one.
import { endWithPeer } from '@quicpool/transport';
import type { QuicSessionStream } from '@quicpool/transport';
import type { SessionSource } from './session-manager.js';

export type PostgresSocketFactory = () => Promise<QuicSessionStream>;

/** `postgres({ ...options, socket: postgresSocket(manager) })` - each connection one session stream. */
export function postgresSocket(sessions: SessionSource): PostgresSocketFactory {
  return async () => {
    const stream = await sessions.acquire();
    Object.defineProperty(stream, 'readyState', {
      configurable: true,
      get(this: QuicSessionStream): string {
        if (this.destroyed) return 'closed';
        if (this.writable) return this.readable ? 'open' : 'writeOnly';
        return this.readable ? 'readOnly' : 'closed';
      },
    });
    // postgres.js, as pg, learns of the server's end from 'close' (see endWithPeer).
    return endWithPeer(stream);
  };
}
