// The per-turn batching of all sends: connections are marked dirty as datagrams arrive or the
// application writes, and ONE setImmediate callback services each dirty connection (reads,
// retried writes) and drains quiche's packets straight into the I/O path's send slots; every
// datagram of the turn, for all connections, then leaves in one batch (one sendmmsg on the
// native path), so ACKs leave with the replies written in the same turn. A connection that only
// received stream data waits up to `ackDelayMs` for a reply before its lone ACK is sent (quiche
// 0.18 has no delayed-ACK timer of its own); one that received no stream data (only ACKs or flow
// control) has no reply to wait for and is answered at once.
import type { QuicConnection } from './connection.js';
import type { DeadlineQueue } from './deadlines.js';
import type { DatagramIo } from './io/datagram-io.js';
import type { Peer } from './io/peer.js';

/** Packets one flush builds at most; what is left goes first in the next turn. */
const MAX_PACKETS_PER_FLUSH = 1024;
/**
 * A dgram socket is read in slices of 32 datagrams with a check phase (our flush) after each:
 * flushing after every slice services each connection for only a packet or two when many
 * connections share the socket. While slices come back full, the flush waits a few turns (the
 * socket is read again at once: a pending immediate makes libuv poll without blocking) so that
 * every connection's packets are handled together. The native path reads until the socket is
 * drained and never waits.
 */
// Measured with bench:transport (separate processes, 3 interleaved pairs each, load ~1.5): 50x40
// at 4 turns 48.5-53.7 µs per round trip per side, at 16 turns 34.8-41.3, at 64 no better than
// 16 (44.5-45.4); 1x40 unchanged or slightly better.
const MAX_DEFERRED_TURNS = 16;
/** The longest an ACK waits once two or more datagrams are unacknowledged (see serviceAll). */
const ACK_SOON_MS = 1;

export class Flusher {
  datagramsOut = 0;
  bytesOut = 0;
  /** The endpoint's current I/O path (replaced by a client's rebind). */
  io: DatagramIo;
  private dirtyList: QuicConnection[] = [];
  private flushScheduled = false;
  private flushing = false;
  /** Datagrams received since the last flush turn (see MAX_DEFERRED_TURNS). */
  private rxThisTurn = 0;
  private deferredTurns = 0;

  constructor(
    io: DatagramIo,
    private readonly ackDelayMs: number,
    private readonly deadlines: DeadlineQueue,
    /** Called after a connection's packets were built (state checks, timer, tickets). */
    private readonly afterSend: (c: QuicConnection, now: number) => void,
  ) {
    this.io = io;
  }

  /** Flush synchronously (forced close: CONNECTION_CLOSE frames must leave before the socket goes). */
  flushNow(): void {
    if (this.flushing) return; // a flush is running further up the stack and will send
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
    if (this.rxThisTurn >= this.io.readsPerEvent && this.deferredTurns < MAX_DEFERRED_TURNS) {
      this.rxThisTurn = 0;
      this.deferredTurns++;
      setImmediate(this.flush);
      return;
    }
    this.rxThisTurn = 0;
    this.deferredTurns = 0;
    this.flushing = true;
    try {
      this.serviceAll();
    } finally {
      this.flushing = false;
      this.io.flush();
    }
    this.flushScheduled = false;
    if (this.dirtyList.length > 0) {
      this.flushScheduled = true;
      setImmediate(this.flush);
    }
  };

  private serviceAll(): void {
    const now = this.deadlines.now();
    let budget = MAX_PACKETS_PER_FLUSH;
    let i = 0;
    // Connections made dirty while flushing (an app writing from a data handler) are appended
    // to `this.dirtyList` and handled by the loop below in the same turn.
    for (let cur = this.takeDirty(); cur.length > 0; cur = this.takeDirty()) {
      for (i = 0; i < cur.length; i++) {
        const c = cur[i]!;
        if (budget <= 0) break;
        const readData = c.service();
        if (!c.isClosed) {
          if (c.wantSend || !c.isEstablished || this.ackDelayMs === 0 || c.closingLocally || !(readData || c.ackDeadline.scheduled)) {
            // Packets without stream data (ACKs, flow control) and no delayed ACK pending: no
            // reply to wait for, so quiche answers at once (for ACKs alone: with nothing), and
            // no timer is set for them.
            c.wantSend = false;
            this.deadlines.clear(c.ackDeadline);
            budget -= this.drain(c, budget, now);
            this.afterSend(c, now);
          } else {
            // Stream data arrived (in this turn, or earlier with its ACK still waiting) and nobody
            // answered within this turn: quiche would send a lone ACK. Give the application up to ackDelayMs to reply so the ACK rides along
            // (quiche has no delayed-ACK timer of its own; the peer allows max_ack_delay 25 ms).
            // From the second unacknowledged datagram on, the ACK waits ACK_SOON_MS at most, as
            // RFC 9000 13.2.2 asks (every second packet), so a sender's window keeps moving.
            const at = now + (c.rxSinceSend >= 2 ? Math.min(this.ackDelayMs, ACK_SOON_MS) : this.ackDelayMs);
            const d = c.ackDeadline;
            if (!d.scheduled || at < d.at) this.deadlines.set(d, at);
          }
        }
        c.dirty = false;
      }
      if (i < cur.length) {
        // Out of budget this turn: the rest goes first next turn.
        this.dirtyList = cur.slice(i).concat(this.dirtyList);
        return;
      }
    }
  }

  private takeDirty(): QuicConnection[] {
    const l = this.dirtyList;
    this.dirtyList = [];
    return l;
  }

  /** `send()` into the I/O path's slots until quiche has nothing more (or the budget is spent). */
  private drain(c: QuicConnection, budget: number, now: number): number {
    const q = c.q;
    const io = this.io;
    let n = 0;
    while (n < budget) {
      const buf = io.nextSlot();
      let r: ReturnType<typeof q.send>;
      try {
        r = q.send(buf);
      } catch {
        r = null;
      }
      if (r === null) break;
      const len = r[0];
      const to = this.peerOf(c, r[1].to);
      // After quiche's close() the only packet it builds is the CONNECTION_CLOSE.
      if (c.wantsClosePacket) c.keepClosePacket(buf, len, to);
      io.commit(len, to);
      this.bytesOut += len;
      n++;
    }
    this.datagramsOut += n;
    // quiche has built every ACK it owed (none, if only ACKs arrived): nothing received is unacknowledged.
    if (n < budget) c.rxSinceSend = 0;
    c.drains++; // whatever the connection's streams gave quiche may have left now (stream.ts DataMark)
    if (n > 0) c.lastSendAt = now;
    if (n >= budget) this.markDirtyLater(c);
    return n;
  }

  /** The interned peer quiche addressed a packet to: almost always the one of the last packet. */
  private peerOf(c: QuicConnection, to: { host: string; port: number }): Peer {
    const p = c.txPeer;
    if (p !== null && p.port === to.port && p.host === to.host) return p;
    const fresh = this.io.peer(to.host, to.port);
    c.txPeer = fresh;
    return fresh;
  }

  private markDirtyLater(c: QuicConnection): void {
    // Still has packets: make sure it is flushed again next turn.
    c.dirty = false;
    setImmediate(() => this.markDirty(c));
  }
}
