// Stateless retry tokens (RFC 9000 8.1.2): with `retry: true` a server answers a client's first
// Initial with a Retry carrying a token, and creates state only when the client comes back with
// that token from the same address — proof the address is not spoofed. Costs one round trip.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

const MAC_LEN = 32;

export class RetryTokens {
  private readonly key: Uint8Array;
  /** `key`: shared by the workers of one port, so a token minted by one is valid at every one. */
  constructor(key?: Uint8Array, private readonly lifetimeMs = 10_000) {
    if (key !== undefined && key.length < 16) throw new RangeError('retryKey must be at least 16 bytes');
    this.key = key ?? randomBytes(32);
  }

  /** Token = issue time (8) | odcid length (1) | odcid | HMAC-SHA256 over those and the address. */
  mint(odcid: Uint8Array, host: string, port: number, now = Date.now()): Buffer {
    const head = Buffer.alloc(9 + odcid.length);
    head.writeBigUInt64BE(BigInt(now), 0);
    head.writeUInt8(odcid.length, 8);
    head.set(odcid, 9);
    return Buffer.concat([head, this.mac(head, host, port)]);
  }

  /** The original DCID the token was minted for, or null when it is forged, foreign or stale. */
  validate(token: Uint8Array, host: string, port: number, now = Date.now()): Uint8Array | null {
    if (token.length < 9 + MAC_LEN) return null;
    const t = Buffer.from(token.buffer, token.byteOffset, token.byteLength);
    const len = t.readUInt8(8);
    if (t.length !== 9 + len + MAC_LEN) return null;
    const head = t.subarray(0, 9 + len);
    if (!timingSafeEqual(this.mac(head, host, port), t.subarray(9 + len))) return null;
    const issued = Number(t.readBigUInt64BE(0));
    if (now - issued > this.lifetimeMs || issued > now + 1000) return null;
    return Uint8Array.from(t.subarray(9, 9 + len));
  }

  private mac(head: Buffer, host: string, port: number): Buffer {
    return createHmac('sha256', this.key).update(head).update(`${host}|${port}`).digest();
  }
}
