// Handing an already-open session stream to node-postgres (pg 8.x). pg's Connection always calls
// `stream.connect(port, host)` and then waits for a 'connect' event, even when it was given the
// stream (`new pg.Client({ stream })`); on an open net.Socket that call would dial a second time.
// So the stream gets an own `connect` that only announces the connection that already exists.
// And drivers learn that the server ended the session from 'close' only, as a net.Socket created
// with the default `allowHalfOpen: false` emits it: its read side ends, so it ends its write side.
// Session streams allow half-open (the pooler needs it), so `endWithPeer` does that for drivers.
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
  return endWithPeer(stream);
}

/**
 * Gives a session stream a net.Socket's default half-close behaviour: once the peer's end has
 * been read, our side ends too, so the stream closes and the driver sees 'close' (a refused login,
 * a terminated backend, a pooler shutting down). Without it the stream stays half-open: the driver
 * never learns the session is over and the stream stays counted in use.
 */
export function endWithPeer<T extends SessionStream>(stream: T): T {
  stream.once('end', () => {
    if (!stream.destroyed && !stream.writableEnded) stream.end();
  });
  return stream;
}
