// The agent's only parsing of what a local client sends before its session: the startup-phase
// packets (SSLRequest, GSSENCRequest, CancelRequest, StartupMessage). Bytes in, a verdict out; no
// I/O. Everything after the StartupMessage is forwarded raw.
import { DEFAULT_MAX_STARTUP_PACKET_SIZE, decodeStartupPacket, isDirectTlsHandshake, MessageType, ProtocolError } from '@quicpool/wire';
import type { CancelRequest, StartupMessage } from '@quicpool/wire';

export type FirstPacket =
  /** Not a whole packet yet: read more. */
  | { readonly kind: 'incomplete' }
  /** SSLRequest or GSSENCRequest: answer 'N' and read the next packet after `length` bytes. */
  | { readonly kind: 'encryptionRequest'; readonly request: 'SSLRequest' | 'GSSENCRequest'; readonly length: number }
  | { readonly kind: 'cancel'; readonly request: CancelRequest; readonly bytes: Buffer; readonly length: number }
  | { readonly kind: 'startup'; readonly message: StartupMessage; readonly bytes: Buffer; readonly length: number }
  /**
   * Terminate ('X') before any startup packet: a client that ends right after connecting
   * (node-postgres's connect() then end()). Close in silence, as PostgreSQL does.
   */
  | { readonly kind: 'terminate' }
  /** Garbage, too long, a direct TLS handshake ...: refuse with 08P01. */
  | { readonly kind: 'invalid'; readonly reason: string };

/** Reads the first startup-phase packet at the start of `buf` (which may hold more bytes). */
export function readFirstPacket(buf: Buffer, maxLength = DEFAULT_MAX_STARTUP_PACKET_SIZE): FirstPacket {
  if (isDirectTlsHandshake(buf)) {
    return { kind: 'invalid', reason: 'direct TLS is not offered by the quicpool agent (the local hop is plain; use sslmode=disable or prefer)' };
  }
  // No startup packet starts with a nonzero byte (its length is far below 2^24), so an 'X' here
  // is a Terminate, whatever follows it.
  if (buf.length > 0 && buf[0] === MessageType.Terminate) return { kind: 'terminate' };
  if (buf.length < 4) return { kind: 'incomplete' };
  const length = buf.readInt32BE(0);
  if (length < 8 || length > maxLength) return { kind: 'invalid', reason: `invalid startup packet length ${length}` };
  if (buf.length < length) return { kind: 'incomplete' };
  const bytes = buf.subarray(0, length);
  let packet;
  try {
    packet = decodeStartupPacket(bytes);
  } catch (e) {
    if (e instanceof ProtocolError) return { kind: 'invalid', reason: e.message };
    throw e;
  }
  switch (packet.type) {
    case 'SSLRequest':
    case 'GSSENCRequest':
      return { kind: 'encryptionRequest', request: packet.type, length };
    case 'CancelRequest':
      return { kind: 'cancel', request: packet, bytes, length };
    case 'StartupMessage':
      return { kind: 'startup', message: packet, bytes, length };
    default: {
      const never: never = packet;
      throw new Error(`unknown startup packet ${JSON.stringify(never)}`);
    }
  }
}
