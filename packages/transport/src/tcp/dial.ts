// Dialing pieces shared by the TCP and TLS dialers (not part of the public API).
import net from 'node:net';
import type { SessionDialer, SessionStream } from '../session-stream.js';
import { TransportError } from '../session-stream.js';
import type { TcpDialOptions, UnixDialOptions } from './index.js';
import { abortSocket, dialError } from './socket-stream.js';

/** Connects a raw net.Socket (shared by the TCP, unix and TLS dialers); rejects with a TransportError. */
export function connectSocket(options: TcpDialOptions | UnixDialOptions): Promise<net.Socket> {
  return new Promise<net.Socket>((resolve, reject) => {
    const where = 'path' in options ? `unix socket ${options.path}` : `tcp ${options.host}:${options.port}`;
    const onread = options.readInto === undefined ? {} : { onread: { buffer: options.readInto.buffer, callback: options.readInto.callback } };
    const socket =
      'path' in options
        ? net.connect({ allowHalfOpen: true, path: options.path, ...onread })
        : net.connect({
            allowHalfOpen: true,
            host: options.host,
            port: options.port,
            noDelay: options.noDelay ?? true,
            keepAlive: options.keepAliveMs !== undefined,
            keepAliveInitialDelay: options.keepAliveMs ?? 0,
            ...(options.localAddress !== undefined ? { localAddress: options.localAddress } : {}),
            ...onread,
          });
    const timeoutMs = options.connectTimeoutMs ?? 10_000;
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new TransportError(`connect to ${where} timed out after ${timeoutMs} ms`, 'ETIMEDOUT'));
    }, timeoutMs);
    const onError = (error: Error): void => {
      clearTimeout(timer);
      reject(dialError(`connect to ${where} failed`, error));
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
