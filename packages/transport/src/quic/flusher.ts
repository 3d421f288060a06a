// The per-turn batching of all sends: connections are marked dirty as datagrams arrive or the
// application writes, and ONE setImmediate callback services each dirty connection (reads,
// retried writes) and then drains quiche's packets, so ACKs leave with the replies written in
// the same turn. A connection that only received packets waits up to `ackDelayMs` for a reply
// before its lone ACK is sent (quiche 0.18 has no delayed-ACK timer of its own).
import type { Host } from '@matrixai/quic/native/index.js';
import type { QuicConnection } from './connection.js';

/**
 * Outgoing packets are written into a ring of preallocated buffers rather than one buffer: a
 * dgram send normally completes synchronously (uv_udp_try_send, and our lookup answers IP literals
 * synchronously), but when the kernel buffer is full libuv finishes it later, still reading the
 * buffer. A buffer is reused only after RING_SIZE others; a flush sends at most RING_SIZE packets.
 */
const RING_SIZE = 1024;
const MAX_PACKET = 1500;
/** Packets built by quiche before they are handed to the socket (see `drain`). */
const SEND_BATCH = 64;
/**
 * libuv reads at most 32 datagrams per readiness event of a UDP socket (`uv__udp_recvmsg`), then
 * returns to the event loop, so a busy socket is read in slices of 32 with a check phase (our
 * flush) after each. Flushing after every slice services each connection for only a packet or
 * two when many connections share the socket; while slices come back full, the flush waits a few
 * turns (the socket is read again at once: a pending immediate makes libuv poll without
 * blocking) so that every connection's packets are handled together.
 */
const UV_UDP_READS_PER_EVENT = 32;
// Measured with bench:transport (separate processes, 3 interleaved pairs each, load ~1.5): 50x40
// at 4 turns 48.5-53.7 µs per round trip per side, at 16 turns 34.8-41.3, at 64 no better than
// 16 (44.5-45.4); 1x40 unchanged or slightly better; p50 latency lower (more round trips/s).
// At most 16 x 32 datagrams wait in the connections' receive queues.
const MAX_DEFERRED_TURNS = 16;

export class Flusher {
  datagramsOut = 0;
  bytesOut = 0;
  private dirtyList: QuicConnection[] = [];
  private flushScheduled = false;
  private readonly ring: Buffer[] = [];
  private ringIdx = 0;
  private readonly lens = new Int32Array(SEND_BATCH);
  private readonly tos: Host[] = new Array<Host>(SEND_BATCH);
  /** Datagrams received since the last flush turn (see UV_UDP_READS_PER_EVENT). */
  private rxThisTurn = 0;
  private deferredTurns = 0;

  constructor(
    private readonly ackDelayMs: number,
    /** Puts one datagram on the wire (`to` is ignored by a connected socket). */
    private readonly send: (buf: Buffer, len: number, to: Host) => void,
    /** Called after a connection's packets went out (state checks, timer, tickets). */
    private readonly afterSend: (c: QuicConnection, now: number) => void,
  ) {
    for (let i = 0; i < RING_SIZE; i++) this.ring.push(Buffer.allocUnsafeSlow(MAX_PACKET));
  }

  /** A buffer for a packet built outside the flush (Version Negotiation, Retry). */
  nextBuffer(): Buffer {
    const out = this.ring[this.ringIdx]!;
    this.ringIdx = this.ringIdx + 1 === RING_SIZE ? 0 : this.ringIdx + 1;
    return out;
  }

  /** Flush synchronously (forced close: CONNECTION_CLOSE frames must leave before the socket goes). */
  flushNow(): void {
    this.flushScheduled = true;
    this.rxThisTurn = 0;
    this.flush();
  }

  markDirty(c: QuicConnection): void {
    c.wantSend = true;
    this.markReceived(c);
  }

  /** The socket handed us one datagram (counted to tell a full read slice from a drained socket). */
  noteDatagram(): void {
    this.rxThisTurn++;
  }

  markReceived(c: QuicConnection): void {
    if (c.dirty) return;
    c.dirty = true;
    this.dirtyList.push(c);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flush);
    }
  }

  private readonly flush = (): void => {
    if (this.rxThisTurn >= UV_UDP_READS_PER_EVENT && this.deferredTurns < MAX_DEFERRED_TURNS) {
      this.rxThisTurn = 0;
      this.deferredTurns++;
      setImmediate(this.flush);
      return;
    }
    this.rxThisTurn = 0;
    this.deferredTurns = 0;
    const list = this.dirtyList;
    this.dirtyList = [];
    const now = Date.now();
    let budget = RING_SIZE;
    let i = 0;
    // Connections made dirty while flushing (an app writing from a data handler) are appended
    // to `this.dirtyList` and handled by the loop below in the same turn.
    for (let cur = list; cur.length > 0; cur = this.takeDirty()) {
      for (i = 0; i < cur.length; i++) {
        const c = cur[i]!;
        if (budget <= 0) break;
        c.service();
        if (!c.isClosed) {
          if (c.wantSend || !c.isEstablished || this.ackDelayMs === 0 || c.closingLocally) {
            c.wantSend = false;
            if (c.ackTimer !== null) clearTimeout(c.ackTimer);
            c.ackTimer = null;
            budget -= this.drain(c, budget, now);
            this.afterSend(c, now);
          } else {
            // Only packets arrived and nobody answered within this turn: quiche would send a
            // lone ACK. Give the application up to ackDelayMs to reply so the ACK rides along
            // (quiche has no delayed-ACK timer of its own; the peer allows max_ack_delay 25 ms).
            c.ackTimer ??= setTimeout(this.ackDue, this.ackDelayMs, c);
          }
        }
        c.dirty = false;
      }
      if (i < cur.length) {
        // Out of send buffers this turn: the rest goes first next turn.
        this.dirtyList = cur.slice(i).concat(this.dirtyList);
        break;
      }
    }
    this.flushScheduled = false;
    if (this.dirtyList.length > 0) {
      this.flushScheduled = true;
      setImmediate(this.flush);
    }
  };

  private readonly ackDue = (c: QuicConnection): void => {
    c.ackTimer = null;
    if (!c.isClosed) this.markDirty(c);
  };

  private takeDirty(): QuicConnection[] {
    const l = this.dirtyList;
    this.dirtyList = [];
    return l;
  }

  /**
   * `send()` until quiche has nothing more, one datagram per packet. Packets are built in
   * batches of up to SEND_BATCH and only then handed to the socket: alternating quiche and the
   * sendmsg syscall (which on loopback also runs the receiver's kernel path) per packet thrashes
   * the caches of both.
   */
  private drain(c: QuicConnection, budget: number, now: number): number {
    const q = c.q;
    const lens = this.lens;
    const tos = this.tos;
    let n = 0;
    let done = false;
    while (!done && n < budget) {
      const first = this.ringIdx;
      let k = 0;
      const max = Math.min(SEND_BATCH, budget - n);
      while (k < max) {
        const buf = this.ring[this.ringIdx]!;
        let r: ReturnType<typeof q.send>;
        try {
          r = q.send(buf);
        } catch {
          r = null;
        }
        if (r === null) {
          done = true;
          break;
        }
        this.ringIdx = this.ringIdx + 1 === RING_SIZE ? 0 : this.ringIdx + 1;
        lens[k] = r[0];
        tos[k] = r[1].to;
        k++;
      }
      let idx = first;
      for (let j = 0; j < k; j++) {
        const len = lens[j]!;
        // After quiche's close() the only packet it builds is the CONNECTION_CLOSE.
        if (c.wantsClosePacket) c.keepClosePacket(this.ring[idx]!, len, tos[j]!);
        this.send(this.ring[idx]!, len, tos[j]!);
        this.bytesOut += len;
        idx = idx + 1 === RING_SIZE ? 0 : idx + 1;
      }
      n += k;
    }
    this.datagramsOut += n;
    if (n > 0) c.lastSendAt = now;
    if (n >= budget) this.markDirtyLater(c);
    return n;
  }

  private markDirtyLater(c: QuicConnection): void {
    // Still has packets: make sure it is flushed again next turn.
    c.dirty = false;
    setImmediate(() => this.markDirty(c));
  }
}
