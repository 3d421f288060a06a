// The BackendKeyData the agent hands out itself in fast-started sessions, and the pooler's real
// key behind each: a local client's CancelRequest with one of these keys is sent on with the real
// one; one that comes before the real key is known waits for it (or is dropped when the session
// ends first). Keys the agent did not issue pass unchanged. No I/O.
import { randomBytes, randomInt } from 'node:crypto';
import { encodeStartupPacket } from '@quicpool/wire';
import type { BackendKey } from './login-answer.js';

interface Issued {
  real: BackendKey | null;
  /** CancelRequests that came before the real key: resolved with the real packet, or null. */
  waiting: ((packet: Buffer | null) => void)[];
}

const id = (k: BackendKey): string => `${k.processId}:${k.secretKey.toString('hex')}`;

export class CancelKeys {
  private readonly issued = new Map<string, Issued>();

  /** A fresh key of the agent's own, `keyLength` secret bytes. */
  issue(keyLength: number): BackendKey {
    for (;;) {
      const key = { processId: randomInt(1, 2 ** 31 - 1), secretKey: randomBytes(keyLength) };
      if (!this.issued.has(id(key))) {
        this.issued.set(id(key), { real: null, waiting: [] });
        return key;
      }
    }
  }

  /** The pooler's key for `own` is known: held cancels leave now. */
  resolve(own: BackendKey, real: BackendKey): void {
    const e = this.issued.get(id(own));
    if (e === undefined) return;
    e.real = real;
    for (const w of e.waiting.splice(0)) w(cancelPacket(real));
  }

  /** The session of `own` is over: held cancels are dropped (there is nothing left to cancel). */
  release(own: BackendKey): void {
    const e = this.issued.get(id(own));
    if (e === undefined) return;
    this.issued.delete(id(own));
    for (const w of e.waiting.splice(0)) w(null);
  }

  /** Cancel requests waiting for a real key right now. */
  get held(): number {
    let n = 0;
    for (const e of this.issued.values()) n += e.waiting.length;
    return n;
  }

  /**
   * The CancelRequest to send for the local client's `key` (`packet`: what it sent): the real
   * one, `packet` itself for a key the agent did not issue, or (resolved later) the real one once
   * known; null: the session ended first.
   */
  translate(key: BackendKey, packet: Buffer): Buffer | Promise<Buffer | null> {
    const e = this.issued.get(id(key));
    if (e === undefined) return packet;
    if (e.real !== null) return cancelPacket(e.real);
    return new Promise((resolve) => e.waiting.push(resolve));
  }
}

function cancelPacket(k: BackendKey): Buffer {
  return encodeStartupPacket({ type: 'CancelRequest', processId: k.processId, secretKey: k.secretKey });
}
