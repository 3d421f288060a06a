// TCP side of the WAN emulator: every accepted connection gets its own upstream connection to the
// target; bytes (and FIN/RST) go through the shared per-direction delay lines, so a chunk read at
// t arrives at t + delay. TCP_NODELAY on both legs: Nagle would add its own, unmeasured delay.
// Loss is not emulated on TCP: a user-space relay sees a reliable byte stream (use UDP/QUIC, or
// kernel-level iptables drops, for loss).
import net from 'node:net';
import type { Sink } from './delay-line.js';

/** What travels through a delay line for TCP: bytes, or the end (FIN) or abort (RST) of a leg. */
export interface TcpSegment {
  to: net.Socket;
  from: net.Socket;
  data: Buffer | 'end' | 'reset';
}

/** Past this many bytes in flight per connection direction, stop reading (TCP backpressure). */
const MAX_IN_FLIGHT = 4 * 1024 * 1024;

/** Delivers a segment that has spent its delay in the line. */
export function deliverTcp(segment: TcpSegment): void {
  const { to, data } = segment;
  if (to.destroyed) return;
  if (data === 'end') to.end();
  else if (data === 'reset') to.resetAndDestroy();
  else {
    inFlight.set(segment.from, (inFlight.get(segment.from) ?? 0) - data.length);
    to.write(data);
    // Resume the reader once the line and the destination both have room again.
    if (segment.from.isPaused() && (inFlight.get(segment.from) ?? 0) < MAX_IN_FLIGHT / 2 && to.writableLength < MAX_IN_FLIGHT) {
      segment.from.resume();
    }
  }
}

/** Bytes read from a socket and not yet written onward. */
const inFlight = new WeakMap<net.Socket, number>();

export interface TcpRelay {
  server: net.Server;
  connections(): number;
  close(): Promise<void>;
}

export function createTcpRelay(
  target: { host: string; port: number },
  up: Sink<TcpSegment>,
  down: Sink<TcpSegment>,
): TcpRelay {
  const open = new Set<net.Socket>();
  const server = net.createServer({ allowHalfOpen: true, noDelay: true }, (client) => {
    const upstream = net.connect({ host: target.host, port: target.port, allowHalfOpen: true, noDelay: true });
    open.add(client);
    open.add(upstream);
    pump(client, upstream, up);
    pump(upstream, client, down);
    const forget = (socket: net.Socket) => () => open.delete(socket);
    client.once('close', forget(client));
    upstream.once('close', forget(upstream));
  });
  return {
    server,
    connections: () => open.size / 2,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of open) socket.destroy();
        open.clear();
      }),
  };
}

/** Reads `from`, queues what it reads in `line` towards `to`, including its FIN or RST. */
function pump(from: net.Socket, to: net.Socket, line: Sink<TcpSegment>): void {
  inFlight.set(from, 0);
  from.on('data', (data: Buffer) => {
    if (!line.push({ from, to, data }, data.length)) {
      // The line is full: a WAN would drop and retransmit; we simply abort this connection.
      from.destroy();
      to.destroy();
      return;
    }
    const queued = (inFlight.get(from) ?? 0) + data.length;
    inFlight.set(from, queued);
    if (queued >= MAX_IN_FLIGHT || to.writableLength >= MAX_IN_FLIGHT) from.pause();
  });
  from.on('end', () => line.push({ from, to, data: 'end' }, 0));
  // An error (RST from the peer, or a failed upstream connect) travels as a delayed RST.
  from.on('error', () => line.push({ from, to, data: 'reset' }, 0));
  to.on('drain', () => {
    if (from.isPaused() && (inFlight.get(from) ?? 0) < MAX_IN_FLIGHT / 2) from.resume();
  });
}
