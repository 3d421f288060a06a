// Handing an already-open session stream to node-postgres (pg 8.x). pg's Connection always calls
// `stream.connect(port, host)` and then waits for a 'connect' event, even when it was given the
// stream (`new pg.Client({ stream })`); on an open net.Socket that call would dial a second time.
// So the stream gets an own `connect` that only announces the connection that already exists.
import type { SessionStream } from './session-stream.js';

/**
 * Prepares an open session stream for `new pg.Client({ stream: () => forNodePostgres(s) })`.
 * Use the client WITHOUT pg's `ssl` option: TLS (or QUIC) is already done by the transport.
 */
export function forNodePostgres<T extends SessionStream>(stream: T): T {
  Object.defineProperty(stream, 'connect', {
    configurable: true,
    writable: true,
    value: function connectAlreadyOpen(this: T): T {
      // pg attaches its 'connect' listener right after calling connect(); announce on next tick.
      process.nextTick(() => {
        if (!this.destroyed) this.emit('connect');
      });
      return this;
    },
  });
  return stream;
}
