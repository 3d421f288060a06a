// UDP socket plumbing for the endpoint: creation with large kernel buffers (the default 208 KB
// drops packets at 2,000 streams), optional connect() for clients, and orderly closing.
import dgram from 'node:dgram';
import { lookup as dnsLookup } from 'node:dns';
import type { LookupOneOptions } from 'node:dns';
import { isIP, isIPv6 } from 'node:net';
import type { Host } from '@matrixai/quic/native/index.js';

/** Loopback servers are reached from loopback; anything else from the family's wildcard. */
export function defaultBindHost(server: string): string {
  if (server === '127.0.0.1' || server === '::1') return server;
  return isIPv6(server) ? '::' : '0.0.0.0';
}

export function openSocket(host: string, port: number, bufBytes: number, connectTo: Host | null): Promise<dgram.Socket> {
  return new Promise((resolve, reject) => {
    const type = isIPv6(host) ? 'udp6' : 'udp4';
    const socket = dgram.createSocket({ type, recvBufferSize: bufBytes, sendBufferSize: bufBytes, lookup: literalLookup });
    socket.once('error', reject);
    socket.bind(port, host, () => {
      if (connectTo === null) {
        socket.off('error', reject);
        resolve(socket);
        return;
      }
      socket.connect(connectTo.port, connectTo.host, () => {
        socket.off('error', reject);
        resolve(socket);
      });
    });
  });
}

export function closeSocket(s: dgram.Socket): Promise<void> {
  return new Promise((resolve) => {
    try {
      s.close(() => resolve());
    } catch {
      resolve();
    }
  });
}

/** The last IP literal `literalLookup` answered, and its family. */
let lastLiteral = '';
let lastFamily = 0;

/**
 * dgram resolves the destination of every unconnected `send()` through `dns.lookup`, which for an
 * IP literal still costs validators, closures and a nextTick per packet. Every address we send to
 * comes from a received datagram or quiche's SendInfo, i.e. is an IP literal: answer it
 * synchronously (which also makes the send itself happen before `send()` returns).
 */
function literalLookup(
  hostname: string,
  options: LookupOneOptions | number,
  callback: (err: NodeJS.ErrnoException | null, address: string, family: number) => void,
): void {
  // A server answers the same few peers over and over: skip the IP parsing for the last one.
  if (hostname === lastLiteral) {
    callback(null, hostname, lastFamily);
    return;
  }
  const family = isIP(hostname);
  if (family !== 0) {
    lastLiteral = hostname;
    lastFamily = family;
    callback(null, hostname, family);
    return;
  }
  dnsLookup(hostname, typeof options === 'number' ? { family: options } : options, callback);
}
