// Dialing pieces shared by the TCP and TLS dialers (not part of the public API).
import net from 'node:net';
import type { SessionDialer, SessionStream } from '../session-stream.js';
import { TransportError } from '../session-stream.js';
import type { TcpDialOptions } from './index.js';
import { abortSocket, dialError } from './socket-stream.js';

/** Connects a raw net.Socket (shared by TCP and TLS dialers); rejects with a TransportError. */
export function connectSocket(options: TcpDialOptions): Promise<net.Socket> {
  return new Promise<net.Socket>((resolve, reject) => {
    const socket = net.connect({
      allowHalfOpen: true,
      host: options.host,
      port: options.port,
      noDelay: options.noDelay ?? true,
      keepAlive: options.keepAliveMs !== undefined,
      keepAliveInitialDelay: options.keepAliveMs ?? 0,
      ...(options.localAddress !== undefined ? { localAddress: options.localAddress } : {}),
    });
    const timeoutMs = options.connectTimeoutMs ?? 10_000;
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new TransportError(`tcp connect to ${options.host}:${options.port} timed out after ${timeoutMs} ms`, 'ETIMEDOUT'));
    }, timeoutMs);
    const onError = (error: Error): void => {
      clearTimeout(timer);
      reject(dialError(`tcp connect to ${options.host}:${options.port} failed`, error));
    };
    socket.once('error', onError);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.off('error', onError);
      resolve(socket);
    });
  });
}

/** Wraps an open() function with the close() semantics above (shared with TLS). */
export function trackingDialer(kind: 'tcp' | 'tls', dial: () => Promise<SessionStream>): SessionDialer {
  const open = new Set<SessionStream>();
  let closed = false;
  return {
    kind,
    async open(): Promise<SessionStream> {
      if (closed) throw new TransportError(`${kind} dialer is closed`, 'ECONNABORTED');
      const stream = await dial();
      if (closed) {
        stream.destroy();
        throw new TransportError(`${kind} dialer is closed`, 'ECONNABORTED');
      }
      open.add(stream);
      stream.once('close', () => open.delete(stream));
      return stream;
    },
    async close(): Promise<void> {
      closed = true;
      const closing = [...open].map(
        (stream) =>
          new Promise<void>((resolve) => {
            stream.once('close', () => resolve());
            abortSocket(stream as unknown as net.Socket);
          }),
      );
      await Promise.all(closing);
    },
  };
}
