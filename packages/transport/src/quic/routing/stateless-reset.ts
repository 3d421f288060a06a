// Stateless resets (RFC 9000 10.3): an endpoint that gets a short-header packet for a connection
// it has no state for (a worker that restarted, a daemon that restarted) answers with a packet
// that looks like any other but ends in the reset token of the DCID, so the peer closes at once
// instead of waiting out its idle timeout. The token of a CID is derived from one key, so every
// worker that shares the key (and a restarted daemon that kept it) can reset any CID issued under
// it, and quiche gets the same token for the CIDs it announces (transport parameter,
// NEW_CONNECTION_ID).
import { createHmac, randomBytes, randomFillSync } from 'node:crypto';

export const RESET_TOKEN_LEN = 16;
/** Smallest stateless reset: 1 + at least 4 unpredictable bytes + the token (RFC 9000 10.3). */
const MIN_RESET_LEN = 21;
/** Largest one we send: longer ones cost bandwidth and say nothing more. */
const MAX_RESET_LEN = 43;

export class StatelessResets {
  private readonly key: Uint8Array;
  /** Token bucket: at most `perSecond` resets a second (a flood of junk gets a trickle back). */
  private tokens: number;
  private refilledAt = 0;

  constructor(key: Uint8Array | undefined, private readonly perSecond = 200) {
    if (key !== undefined && key.length < 16) throw new RangeError('statelessResetKey must be at least 16 bytes');
    this.key = key ?? randomBytes(32);
    this.tokens = perSecond;
  }

  /** The reset token of `cid` (its 16 bytes). */
  token(cid: Uint8Array): Buffer {
    return createHmac('sha256', this.key).update(cid).digest().subarray(0, RESET_TOKEN_LEN);
  }

  /** The token as quiche's binding takes it: a u128 whose big-endian bytes are the token. */
  tokenValue(cid: Uint8Array): bigint {
    return BigInt(`0x${this.token(cid).toString('hex')}`);
  }

  /**
   * The reset answering a `triggerLength`-byte packet for `cid`, written into `out`; its length,
   * or 0 when none may be sent: the trigger is too small for a reset shorter than itself (so two
   * endpoints cannot reset each other in a loop), or the rate limit is spent.
   */
  build(cid: Uint8Array, triggerLength: number, out: Uint8Array, now: number): number {
    const len = Math.min(triggerLength - 1, MAX_RESET_LEN);
    if (len < MIN_RESET_LEN) return 0;
    if (now - this.refilledAt >= 1000) {
      this.tokens = this.perSecond;
      this.refilledAt = now;
    }
    if (this.tokens <= 0) return 0;
    this.tokens--;
    const packet = out.subarray(0, len);
    randomFillSync(packet, 0, len - RESET_TOKEN_LEN);
    packet[0] = 0x40 | (packet[0]! & 0x3f); // short header form, fixed bit set
    packet.set(this.token(cid), len - RESET_TOKEN_LEN);
    return len;
  }
}
