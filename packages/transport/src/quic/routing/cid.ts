// Connection ids this endpoint hands out, and the allocation-free routing key derived from them.
// Every local CID is CID_LEN bytes; its first 6 bytes are unique within the endpoint,
// so a short-header packet is routed by reading those bytes as one integer (no string, no copy).
// A worker of a multi-worker server issues CIDs whose first byte names it (see steering.ts).
import { randomBytes } from 'node:crypto';

/** Length of every connection id this endpoint issues (short headers carry no length). */
export const CID_LEN = 8;
// The routing key is the first 6 bytes (48 bits fit a JS number exactly).

/** Worker `index` of `count` sharing one UDP port: its CIDs' first byte is index (mod count). */
export interface CidOwner {
  readonly index: number;
  readonly count: number;
}

/** Routing key of a CID found at `offset` in `buf` (1 for a short header's DCID). */
export function routeKey(buf: Uint8Array, offset: number): number {
  // Two reads without a DataView/Buffer allocation: 16 high bits, 32 low bits.
  const hi = (buf[offset]! << 8) | buf[offset + 1]!;
  const lo = ((buf[offset + 2]! << 24) | (buf[offset + 3]! << 16) | (buf[offset + 4]! << 8) | buf[offset + 5]!) >>> 0;
  return hi * 0x1_0000_0000 + lo;
}

/**
 * A fresh CID whose routing key is not in `taken`. With an `owner`, its first byte is
 * `owner.index + owner.count * r` for a random r: random above the worker's residue.
 */
export function newCid(taken: { has(key: number): boolean }, owner: CidOwner | null = null): { cid: Uint8Array; key: number } {
  for (;;) {
    const cid = randomBytes(CID_LEN);
    if (owner !== null && owner.count > 1) cid[0] = owner.index + owner.count * (cid[0]! % Math.floor(256 / owner.count));
    const key = routeKey(cid, 0);
    if (!taken.has(key)) return { cid: new Uint8Array(cid.buffer, cid.byteOffset, CID_LEN), key };
  }
}

export function cidHex(cid: Uint8Array): string {
  return Buffer.from(cid.buffer, cid.byteOffset, cid.byteLength).toString('hex');
}
