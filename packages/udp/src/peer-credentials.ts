// Who is at the other end of a unix socket (SO_PEERCRED), for checks like Postgres' peer
// authentication. Node has no API for it: the native module reads it from the socket's fd. Where
// the module (or that function) is missing, `peerCredentialsSupport()` says why and callers fall
// back to what the socket file's permissions allow.
import type { Socket } from 'node:net';
import { loadUdpBinding } from './binding.js';
import type { PeerCredentials } from './binding.js';

export type { PeerCredentials };

export type PeerCredentialsSupport = { available: true } | { available: false; reason: string };

export function peerCredentialsSupport(): PeerCredentialsSupport {
  const b = loadUdpBinding();
  if (!b.available) return { available: false, reason: b.reason };
  if (typeof b.binding.peerCredentials !== 'function') return { available: false, reason: `${b.path} predates peerCredentials` };
  return { available: true };
}

/** The peer of a connected unix socket, or null (not a unix socket, closed, or no native module). */
export function peerCredentials(socket: Socket): PeerCredentials | null {
  const b = loadUdpBinding();
  if (!b.available || typeof b.binding.peerCredentials !== 'function') return null;
  // net.Socket keeps its libuv handle in _handle; a Pipe handle exposes its fd on Unix.
  const fd = (socket as unknown as { _handle?: { fd?: unknown } })._handle?.fd;
  if (typeof fd !== 'number' || fd < 0) return null;
  return b.binding.peerCredentials(fd);
}
