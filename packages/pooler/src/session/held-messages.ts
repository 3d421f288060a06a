// The client messages a session holds instead of forwarding: those that wait for a backend (none
// is attached), and, under the read-only 0-RTT policy, those that wait for the QUIC handshake's
// confirmation. Their total size is what the driver bounds by pausing the client's reads.

export class HeldMessages {
  /** Waiting for a backend, in order. */
  private waiting: Buffer[] = [];
  /** The other of the two `waiting` arrays (swapped by forEachWaiting: none allocated per transaction). */
  private spare: Buffer[] = [];
  private waitingBytes = 0;
  /** Waiting for the handshake's confirmation, in order (the first one could not run early). */
  private early: Buffer[] = [];
  private earlyBytes = 0;

  /** Bytes held, both kinds. */
  get bytes(): number {
    return this.waitingBytes + this.earlyBytes;
  }

  get anyWaiting(): boolean {
    return this.waiting.length > 0;
  }

  get anyEarly(): boolean {
    return this.early.length > 0;
  }

  /** The one message held, when exactly one waits for a backend and none for the confirmation. */
  get lone(): Buffer | undefined {
    return this.waiting.length === 1 && this.early.length === 0 ? this.waiting[0] : undefined;
  }

  /** Forgets the messages waiting for a backend (they were sent). */
  dropWaiting(): void {
    while (this.waiting.length > 0) this.waiting.pop();
    this.waitingBytes = 0;
  }

  /** A message that waits for a backend. */
  hold(bytes: Buffer): void {
    this.waiting.push(bytes);
    this.waitingBytes += bytes.length;
  }

  /** A message that waits for the handshake's confirmation. */
  holdEarly(bytes: Buffer): void {
    this.early.push(bytes);
    this.earlyBytes += bytes.length;
  }

  /** Hands every message that waited for a backend to `to`, in order, and forgets them. */
  forEachWaiting(to: (bytes: Buffer) => void): void {
    // The two arrays swap roles: `to` holds nothing more (a backend is attached), but stays correct if it did.
    const waiting = this.waiting;
    this.waiting = this.spare;
    this.waitingBytes = 0;
    for (let i = 0; i < waiting.length; i++) to(waiting[i]!);
    // Emptied by pop (inlined) rather than `length = 0` (a call into V8's runtime): it holds one or two.
    while (waiting.length > 0) waiting.pop();
    this.spare = waiting;
  }

  /** The messages that waited for confirmation, in order; forgotten here. */
  takeEarly(): Buffer[] {
    const early = this.early;
    this.early = [];
    this.earlyBytes = 0;
    return early;
  }

  clear(): void {
    this.waiting = [];
    this.early = [];
    this.waitingBytes = 0;
    this.earlyBytes = 0;
  }
}
