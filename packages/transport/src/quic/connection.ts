// One QUIC connection: the quiche state machine plus the streams on it. The endpoint feeds it
// datagrams (`receive`) and, once per event-loop turn, asks it to do its stream work (`service`)
// before draining quiche's outgoing packets; the connection never touches the socket itself.
import { EventEmitter } from 'node:events';
import type { Connection, RecvInfo } from '@matrixai/quic/native/index.js';
import { TransportError } from '../session-stream.js';
import { peerCertificateFromDer } from '../peer-certificate.js';
import type { PeerCertificate } from '../peer-certificate.js';
import { AppError, connectionClosedError } from './errors.js';
import { QuicSessionStream, quicSessionInfo, writeFin } from './stream.js';
import type { DataMark, StreamHost } from './stream.js';
import { SeenIds, isCollected } from './stream-ids.js';
import { RecentStreams } from './recent-streams.js';
import { Deadline } from './deadlines.js';
import type { DeadlineQueue } from './deadlines.js';
import type { Peer } from './io/peer.js';

/** What a connection needs from its endpoint. */
export interface ConnectionHost {
  readonly scratch: Uint8Array;
  readonly pendingWriteLimit: number;
  /** Something local (a write, a timer, a close) needs packets sent in the next flush. */
  markDirty(c: QuicConnection): void;
  /** A datagram arrived: service the connection; its ACK may wait briefly for a reply. */
  markReceived(c: QuicConnection): void;
  /** Sends one datagram now, outside the flush (a repeated CONNECTION_CLOSE). */
  sendRaw(buf: Buffer, len: number, to: Peer, closeEcho: boolean): void;
  /** The endpoint's timers: every connection's quiche timeout and delayed ACK live there. */
  readonly deadlines: DeadlineQueue;
  /** quiche refused `n` queued datagrams (undecryptable, invalid, too late). */
  countRejected(n: number): void;
  /** A peer stream was already reset when discovered, so it was never handed out. */
  countResetBeforeAccept(): void;
  /** The handshake completed (counted by outcome, with the failures connectionClosed sees). */
  handshakeCompleted(): void;
  /** The connection reached quiche's closed state: drop its routes and timers. */
  connectionClosed(c: QuicConnection): void;
  /** Address this endpoint is bound to (for SessionInfo). */
  localAddress(): { address: string; port: number };
}

export interface ConnectionInit {
  role: 'client' | 'server';
  cidHex: string;
  local: Peer;
  remote: Peer;
  serverName: string | null;
  earlyDataPolicy: 'accept' | 'defer';
  /** Client: a session ticket was set, so data written before the handshake goes out as 0-RTT. */
  resuming: boolean;
  /**
   * The peer's certificate is verified: a client with verification on, a server with `clientCa`
   * (there, only clients that presented one have a certificate to show).
   */
  verifiesPeer: boolean;
}

interface OpenWaiter {
  resolve(s: QuicSessionStream): void;
  reject(e: Error): void;
}

/** Limit on `open()` calls waiting for stream credit, so a stuck peer cannot grow memory. */
const MAX_OPEN_WAITERS = 100_000;

export class QuicConnection extends EventEmitter implements StreamHost {
  readonly streams = new Map<number, QuicSessionStream>();
  /** The same streams, most recently read first: the order a flush asks quiche about them in. */
  private readonly recent = new RecentStreams<QuicSessionStream>();
  /** Set by the endpoint while the connection is queued for the next flush. */
  dirty = false;
  /** Datagrams received since quiche last built this connection's packets (with any ACK due). */
  rxSinceSend = 0;
  /** Something other than received packets wants a send in the next flush. */
  wantSend = false;
  /** The endpoint's delayed ACK for this connection (see flusher.ts), in the endpoint's deadlines. */
  readonly ackDeadline: Deadline;
  /** The peer quiche last addressed packets to (interned by the flusher: see `Flusher.drain`). */
  txPeer: Peer | null = null;
  /** Endpoint bookkeeping: routing keys of this connection's CIDs. */
  readonly routeKeys: number[] = [];
  lastSendAt = 0;
  ticketPolled = false;
  /** Server: the spare connection ids were issued (see QuicEndpoint.issueCids). */
  cidsIssued = false;
  readonly pendingWriteLimit: number;
  readonly scratch: Uint8Array;
  private readonly blocked = new Set<QuicSessionStream>();
  /** Streams destroyed without error whose FIN is still to be written (see `finishLater`). */
  private pendingFins: Array<{ id: number; sent: DataMark }> = [];
  /** Packet-building passes so far: the flusher counts them (see stream.ts `DataMark`). */
  drains = 0;
  /** Wakes the connection when held-back FINs may go (see `finMayGo`). */
  private readonly finDeadline: Deadline;
  private rttMs = 0;
  private rttReadAt = -Infinity;
  /** quiche's count of packets declared lost, as last read for a held FIN, and when it last grew. */
  private lostSeen = 0;
  private lostGrewAt = -Infinity;
  /** Smoothed number of streams that had data per flush (chooses polling vs iterating). */
  private activeEstimate = 0;
  private readonly seen = new SeenIds();
  private nextLocalStreamId = 0;
  private waiters: OpenWaiter[] = [];
  private established = false;
  private failed: TransportError | null = null;
  private closedLocally: TransportError | null = null;
  private finalized = false;
  private draining = false;
  /** We called quiche's close(): the next packet it builds carries our CONNECTION_CLOSE. */
  private closeSent = false;
  /**
   * Our CONNECTION_CLOSE datagram, kept for the closing period. quiche 0.18 sends it once and
   * then drops everything (no closing-state replies), so a CLOSE lost to a full receive buffer or
   * to loss would leave the peer waiting for its idle timeout. We answer the peer's packets with
   * it again (RFC 9000 10.2.1), after 1, 2, 4, 8 ... of them, until quiche's 3 PTO are over.
   */
  closePacket: Buffer | null = null;
  closeTo: Peer | null = null;
  private closeEchoRx = 0;
  private estWaiters: Array<{ resolve(): void; reject(e: Error): void }> = [];
  private closeWaiters: Array<() => void> = [];
  /** quiche's own timer (loss detection, idle, draining): see `armTimeout`. */
  private readonly timeoutDeadline: Deadline;
  /** The peer's current address (the path of the last datagram) and the RecvInfo naming it. */
  private rxFrom: Peer | null = null;
  private rxInfo: RecvInfo;
  /** Streams whose consumer is full: quiche still reports them readable (see `discoverNew`). */
  private pausedStreams = 0;
  /** Flushes left before a paused-stream connection may look for far-away new streams again. */
  private discoverCountdown = 0;
  /** The negotiated ALPN ('' for none), read from quiche once for all streams. */
  private alpn: string | null = null;
  /** The peer's verified certificate once known for good (see `peerCertificate`); undefined = ask quiche. */
  private peerCert: PeerCertificate | null | undefined = undefined;
  /** Emitted when a peer opens a stream (server side). */
  onStream: ((s: QuicSessionStream) => void) | null = null;

  constructor(
    private readonly ep: ConnectionHost,
    readonly q: Connection,
    readonly init: ConnectionInit,
  ) {
    super();
    this.pendingWriteLimit = ep.pendingWriteLimit;
    this.scratch = ep.scratch;
    this.rxInfo = { from: init.remote, to: init.local };
    this.timeoutDeadline = new Deadline(this.onTimeoutDue);
    this.ackDeadline = new Deadline(() => {
      if (!this.finalized) this.ep.markDirty(this);
    });
    this.finDeadline = new Deadline(() => {
      if (!this.finalized) this.ep.markDirty(this);
    });
  }

  get isEstablished(): boolean {
    return this.established;
  }
  /** Client: the server accepted our session ticket (resumption, 0-RTT possible). */
  get isResumed(): boolean {
    return this.q.isResumed();
  }
  get isClosed(): boolean {
    return this.finalized;
  }
  /** The peer's address (the latest path's). */
  get remote(): { readonly host: string; readonly port: number } {
    return this.rxFrom ?? this.init.remote;
  }
  /** Why the connection failed or closed, once it has. */
  get error(): TransportError | null {
    return this.failed;
  }

  /**
   * The peer's verified certificate, or null (none presented, or nothing verifies peers here).
   * Asked of quiche until the handshake is done (a resumed server connection knows it from the
   * session ticket during 0-RTT, a full handshake only once the client's Certificate arrived);
   * parsed once and kept after that.
   */
  peerCertificate(): PeerCertificate | null {
    if (this.peerCert !== undefined) return this.peerCert;
    if (!this.init.verifiesPeer) {
      this.peerCert = null;
      return null;
    }
    let leaf: Uint8Array | undefined;
    try {
      leaf = this.q.peerCertChain()?.[0];
    } catch {
      leaf = undefined;
    }
    const cert = peerCertificateFromDer(leaf);
    if (cert !== null || this.established) this.peerCert = cert;
    return cert;
  }

  // --- endpoint-facing ------------------------------------------------------------------------

  /**
   * One datagram for this connection (its bytes are valid only during this call: the native I/O
   * path reuses its receive buffer), fed to quiche at once; false when quiche rejected it. The
   * stream work waits for the flush of this turn (`service`), after every datagram of the batch.
   */
  receive(data: Uint8Array, from: Peer): boolean {
    if (this.closePacket !== null) {
      this.echoClose();
      return true;
    }
    if (this.finalized) return true;
    if (from !== this.rxFrom) {
      // A new path (first datagram, or the peer's address changed: migration), or the same
      // address interned anew: allocate a RecvInfo only when the address really differs.
      if (this.rxFrom === null || from.port !== this.rxFrom.port || from.host !== this.rxFrom.host) {
        this.rxInfo = { from, to: this.init.local };
      }
      this.rxFrom = from;
    }
    let ok = true;
    this.rxSinceSend++;
    try {
      this.q.recv(data, this.rxInfo);
    } catch {
      // Undecryptable or invalid packets are dropped by quiche; fatal errors (TlsFail) close the
      // connection, which `afterSend` notices through isDraining/isClosed.
      ok = false;
    }
    if (!this.established && this.init.role === 'server') this.handshakeStep();
    this.ep.markReceived(this);
    return ok;
  }

  /**
   * Client: `data` named none of the endpoint's connections, so it may be the server's stateless
   * reset for this one. quiche compares its end with the token the server announced; true when it
   * matched and the connection is over (its streams fail with ECONNRESET at once).
   */
  tryStatelessReset(data: Uint8Array): boolean {
    // A connection already closing for a reason of its own keeps that reason.
    if (this.finalized || this.closePacket !== null || !this.established || this.q.isDraining() || this.q.peerError() !== null) return false;
    try {
      this.q.recv(data, this.rxInfo);
    } catch {
      return false;
    }
    if (!this.q.isClosed()) return false;
    this.closedLocally ??= new TransportError('QUIC connection reset by the server (stateless reset: it has no state for this connection)', 'ECONNRESET');
    this.finalize();
    return true;
  }

  private echoClose(): void {
    const n = ++this.closeEchoRx;
    if ((n & (n - 1)) !== 0 || this.closePacket === null || this.closeTo === null || this.finalized) return;
    this.ep.sendRaw(this.closePacket, this.closePacket.length, this.closeTo, true);
  }

  /** Whether the flusher should hand us the packet it just built (see `closePacket`). */
  get wantsClosePacket(): boolean {
    return this.closeSent && this.closePacket === null;
  }

  /** The flusher built our CONNECTION_CLOSE packet: keep a copy for the closing period. */
  keepClosePacket(buf: Uint8Array, len: number, to: Peer): void {
    this.closePacket = Buffer.from(buf.subarray(0, len));
    this.closeTo = to;
  }

  /** Local close under way: send what quiche has at once (no delayed ACK). */
  get closingLocally(): boolean {
    return this.closeSent;
  }

  /** Server, during the handshake: streams that show up now arrived in 0-RTT early data. */
  private handshakeStep(): void {
    if (this.q.isEstablished()) {
      this.onEstablished();
      return;
    }
    if (this.init.earlyDataPolicy === 'accept' && this.q.isInEarlyData() && this.q.isReadable()) this.discoverNew(true);
  }

  /**
   * Stream work of one flush: read what arrived, retry blocked writes. True when stream data (or
   * a new stream) was read: the peer is waiting for an answer, so its ACK may wait for the reply;
   * false when the packets carried no stream data (ACKs, flow-control frames), so there is no
   * reply to wait for and the flusher lets quiche answer at once (usually with nothing).
   */
  service(): boolean {
    if (this.finalized) return false;
    const q = this.q;
    if (!this.established && q.isEstablished()) this.onEstablished();
    let active = 0;
    // With a few streams, polling them is as cheap as asking quiche first whether any is readable.
    if (this.streams.size <= POLL_WITHOUT_ASKING || q.isReadable()) {
      // Polling a known stream costs ~0.15 µs, one pass of the readable() iterator ~30 µs (a napi
      // generator): poll, unless the connection holds so many streams, most of them idle (a
      // pooler connection with hundreds of idle sessions), that the pass is cheaper.
      if (this.streams.size > ITERATE_ABOVE_STREAMS && this.streams.size > 7 * this.activeEstimate + 4) {
        active = this.readViaIterator();
      } else {
        active = this.readRecentFirst();
      }
      this.activeEstimate = (this.activeEstimate * 3 + active) / 4;
    }
    // FINs go into quiche only here, after the reads and right before the flush builds packets
    // (see QuicSessionStream.flushWrites).
    if (this.blocked.size > 0) this.retryBlockedWrites();
    if (this.pendingFins.length > 0) this.writePendingFins();
    if (this.waiters.length > 0) this.grantWaiters();
    return active > 0;
  }

  /**
   * Asks the streams for data newest first (recent-streams.ts says why) and stops as soon as
   * quiche has nothing readable left, so one request on one of many idle streams costs a few
   * questions, not one per stream.
   */
  private readRecentFirst(): number {
    const q = this.q;
    let active = 0;
    for (let s = this.recent.first; s !== null; ) {
      const next = this.recent.next(s);
      if (!s.readEnded && !s.paused && q.streamReadable(s.id)) {
        active++;
        s.pollRead();
        this.recent.touch(s);
        if (!q.isReadable()) return active;
      }
      s = next;
    }
    // Still readable: a stream we do not know yet (server side), or a paused consumer.
    // Before the handshake completes, anything new can only have come as 0-RTT early data.
    if (this.init.role === 'server' && q.isReadable()) active += this.discoverNew(!this.established);
    return active;
  }

  private writePendingFins(): void {
    const fins = this.pendingFins;
    this.pendingFins = [];
    for (const f of fins) {
      if (this.finMayGo(f.sent)) writeFin(this.q, f.id);
      else this.pendingFins.push(f);
    }
    this.ep.markDirty(this); // the packets must be built in this turn
  }

  /**
   * See stream.ts `DataMark`: a FIN goes at once when the stream's data has not been built into
   * packets yet (it rides along) or when that data is acknowledged by now even if some of it was
   * lost once: 4 smoothed RTT plus 3 x the peer's max_ack_delay after it left, which covers a probe
   * timeout (~srtt + 4 rttvar + max_ack_delay) and the retransmission's own round trip. Otherwise it
   * waits, and this connection is woken when it may go. Data lost twice is still in flight after
   * that bound (seen at 5% loss in test/quic-loss.test.ts: the FIN-only frame was lost, quiche
   * collected the stream and the peer never saw the end), so the FIN also waits for a window
   * without any new loss on the connection, up to FIN_SURELY_ACKED_MAX_MS after the data left.
   * quiche exposes no per-stream ACK state, so this is still a bound, not a proof.
   */
  finMayGo(sent: DataMark): boolean {
    if (sent.drains < 0 || sent.drains === this.drains) return true;
    const now = Date.now();
    const elapsed = now - sent.at;
    if (elapsed >= FIN_SURELY_ACKED_MAX_MS) return true;
    const window = 4 * this.smoothedRttMs(now) + 3 * PEER_MAX_ACK_DELAY_MS;
    let at = sent.at + window;
    if (at <= now) {
      // The data had time to be acknowledged even if lost once. Lost again, it is still in flight,
      // and quiche reports that second loss within this window: so the FIN also waits until a
      // whole window has passed without a new loss on the connection (read only here, ~4 µs).
      const lost = this.q.stats().lost;
      if (lost > this.lostSeen) {
        this.lostSeen = lost;
        this.lostGrewAt = now;
      }
      at = this.lostGrewAt + window;
      if (at <= now) return true;
    }
    const d = this.finDeadline;
    if (!d.scheduled || at < d.at) this.ep.deadlines.set(d, at);
    return false;
  }

  /** The active path's smoothed RTT (ms), read from quiche at most every RTT_REFRESH_MS (~4 µs a call). */
  private smoothedRttMs(now: number): number {
    if (now - this.rttReadAt < RTT_REFRESH_MS) return this.rttMs;
    this.rttReadAt = now;
    let rtt = 0;
    for (const p of this.q.pathStats()) if (p.active) rtt = Math.max(rtt, p.rtt);
    this.rttMs = rtt;
    return rtt;
  }

  /**
   * Retries queued writes. Streams that got credit this time move to the back of the line:
   * otherwise the first streams to block would take every MAX_DATA increment, and a stream
   * whose first bytes never fit would never even reach the peer (starvation seen with 40
   * streams flooding one connection: 16 of them shared the whole window, forever).
   */
  private retryBlockedWrites(): void {
    let served: QuicSessionStream[] | null = null;
    for (const s of this.blocked) {
      const before = s.writableQueued;
      if (!s.flushWrites()) {
        this.blocked.delete(s);
        continue;
      }
      if (s.writableQueued < before) (served ??= []).push(s);
    }
    if (served === null) return;
    for (const s of served) {
      this.blocked.delete(s);
      this.blocked.add(s);
    }
  }

  /** After the endpoint drained quiche's packets: state changes, timer. */
  afterSend(now: number): void {
    const q = this.q;
    // Closed, or draining (our CONNECTION_CLOSE has left, or the peer's arrived): quiche will
    // send nothing more, so there is nothing to wait for — its 3-PTO draining period (up to ~1 s
    // early in a connection, whose RTT variance starts at 166 ms) only discards packets. Repeats
    // of our CLOSE for a peer that missed it are the endpoint's job (`routing/closed.ts`).
    if (q.isClosed() || q.isDraining()) {
      if (!this.draining) {
        this.draining = true;
        this.fail();
      }
      this.finalize();
      return;
    }
    if (this.closedLocally !== null) this.emit('serviced');
    this.armTimeout(now);
  }

  /**
   * Keeps quiche's deadline in the endpoint's queue, where quiche has it (to within 1 ms): an ACK
   * that stops the loss timer moves it later at once, so no timer wakes the process for a loss
   * timer that is no longer running (a heap step costs far less than such a wake-up).
   */
  private armTimeout(now: number): void {
    const t = this.q.timeout();
    const d = this.timeoutDeadline;
    if (t === null) {
      this.ep.deadlines.clear(d);
      return;
    }
    const at = now + t;
    if (d.scheduled && Math.abs(at - d.at) < 1) return;
    this.ep.deadlines.set(d, at);
  }

  private readonly onTimeoutDue = (): void => {
    if (this.finalized) return;
    const t = this.q.timeout();
    if (t !== null && t > 0) {
      this.ep.deadlines.set(this.timeoutDeadline, this.ep.deadlines.now() + t);
      return;
    }
    this.q.onTimeout();
    this.ep.markDirty(this);
  };

  // --- StreamHost -----------------------------------------------------------------------------

  markDirty(): void {
    this.ep.markDirty(this);
  }
  writeBlocked(s: QuicSessionStream): void {
    this.blocked.add(s);
  }
  finishLater(id: number, sent: DataMark): void {
    this.pendingFins.push({ id, sent: { drains: sent.drains, at: sent.at } });
    this.ep.markDirty(this);
  }
  readPaused(_s: QuicSessionStream, paused: boolean): void {
    // A paused stream stays readable in quiche, so `isReadable()` alone no longer tells that a
    // new stream arrived (see `discoverNew`).
    this.pausedStreams += paused ? 1 : -1;
  }
  forget(s: QuicSessionStream): void {
    if (this.streams.get(s.id) !== s) return;
    if (s.paused) this.pausedStreams--;
    this.streams.delete(s.id);
    this.recent.remove(s);
    this.blocked.delete(s);
    this.emit('streamClosed', s);
    this.ep.markDirty(this);
  }
  handshakeConfirmed(): Promise<void> {
    if (this.established) return Promise.resolve();
    if (this.failed !== null) return Promise.reject(this.failed);
    return new Promise((resolve, reject) => this.estWaiters.push({ resolve, reject }));
  }

  // --- streams --------------------------------------------------------------------------------

  /** Reads the streams quiche reports readable, discovering new peer streams on the way. */
  private readViaIterator(): number {
    let active = 0;
    let unknown = false;
    for (const id of this.q.readable()) {
      const s = this.streams.get(id);
      if (s === undefined) unknown = true;
      else if (!s.readEnded && !s.paused) {
        active++;
        s.pollRead();
        this.recent.touch(s);
      }
    }
    if (unknown && this.init.role === 'server') active += this.discoverNew(!this.established);
    return active;
  }

  /**
   * Server: hands out the peer's new streams. Clients open bidirectional streams in id order
   * (0, 4, 8 ...), so new ones are found by probing the ids just above the lowest one not seen
   * yet (~0.15 µs each) instead of a pass of the readable() iterator (~30 µs). Only when quiche
   * still reports readable data afterwards, and no paused stream explains it, can a new stream lie
   * further out: then (and for paused connections every DISCOVER_EVERY flushes) the iterator runs.
   */
  private discoverNew(early: boolean): number {
    if (this.init.earlyDataPolicy === 'defer' && !this.established) return 0;
    const q = this.q;
    let found = 0;
    let misses = 0;
    for (let id = this.seen.lowestUnseen; misses < PROBE_MISSES; id += 4) {
      if (this.seen.has(id)) continue;
      if (!q.streamReadable(id)) {
        misses++;
        continue;
      }
      misses = 0;
      found++;
      this.accept(id, early);
    }
    if (!q.isReadable()) return found;
    if (this.pausedStreams > 0 && this.discoverCountdown-- > 0) return found;
    this.discoverCountdown = DISCOVER_EVERY;
    for (const id of q.readable()) {
      if (this.streams.has(id) || this.seen.has(id)) continue;
      // Only client-initiated bidirectional streams carry sessions (ids 0, 4, 8 ...).
      if ((id & 3) !== 0) continue;
      found++;
      this.accept(id, early);
    }
    return found;
  }

  private accept(id: number, early: boolean): void {
    this.seen.add(id);
    const s = this.newStream(id, early);
    // A peer may open a stream and reset it before we read it: pollRead() then destroys the
    // stream with an error that nobody could have listened for yet. Such a stream is never
    // handed out, and its error (emitted on the next tick) lands on this no-op listener.
    s.on('error', ignoreError);
    s.pollRead();
    if (s.destroyed) {
      this.ep.countResetBeforeAccept();
      return;
    }
    s.off('error', ignoreError);
    if (this.onStream !== null) this.onStream(s);
    else s.destroy();
  }

  private newStream(id: number, early: boolean): QuicSessionStream {
    const local = this.ep.localAddress();
    const remote = this.rxFrom ?? this.init.remote;
    // Cached once the handshake is done; before (0-RTT) quiche may not know it yet.
    const alpn = this.alpn ?? alpnOf(this.q);
    if (this.established) this.alpn = alpn;
    const info = quicSessionInfo({
      local, remote, id, early,
      alpn: alpn === '' ? null : alpn,
      peer: this, serverName: this.init.serverName, cidHex: this.init.cidHex,
    });
    const s = new QuicSessionStream(this, id, info);
    this.streams.set(id, s);
    this.recent.add(s);
    return s;
  }

  /** Open streams plus `open()` calls still waiting: how busy this connection is. */
  get load(): number {
    return this.streams.size + this.waiters.length;
  }

  /** Streams the peer still lets us open right now. */
  streamCredit(): number {
    if (this.failed !== null || this.closedLocally !== null) return 0;
    return this.q.peerStreamsLeftBidi();
  }

  /** Client: a new stream now, or null when the peer has granted no credit (yet). */
  tryOpenStream(): QuicSessionStream | null {
    if (this.streamCredit() <= 0) return null;
    const id = this.nextLocalStreamId;
    // An empty write makes quiche create the stream, which consumes the credit at once, so our
    // count and quiche's never disagree (a StreamLimit error would poison the connection).
    this.q.streamSend(id, new Uint8Array(0), false);
    this.nextLocalStreamId += 4;
    // quiche derives its 0-RTT keys only with the first flight, so ask "are we resuming?" rather
    // than isInEarlyData(): the flag means "offered as early data" (the server may reject it).
    return this.newStream(id, !this.established && this.init.resuming);
  }

  /** Client: a new stream, waiting for the handshake or for stream credit when needed. */
  openStream(): Promise<QuicSessionStream> {
    if (this.failed !== null) return Promise.reject(this.failed);
    if (this.closedLocally !== null) return Promise.reject(this.closedLocally);
    if (this.waiters.length === 0) {
      const s = this.tryOpenStream();
      if (s !== null) return Promise.resolve(s);
    }
    if (this.waiters.length >= MAX_OPEN_WAITERS) {
      return Promise.reject(new TransportError('too many QUIC streams waiting for credit', 'ECONNREFUSED'));
    }
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  private grantWaiters(): void {
    let i = 0;
    while (i < this.waiters.length) {
      const s = this.tryOpenStream();
      if (s === null) break;
      this.waiters[i++]!.resolve(s);
    }
    if (i > 0) this.waiters.splice(0, i);
  }

  // --- closing --------------------------------------------------------------------------------

  private onEstablished(): void {
    this.established = true;
    this.ep.handshakeCompleted();
    // The last handshake flight (client Finished, server HANDSHAKE_DONE) must not wait for the
    // delayed-ACK timer.
    this.wantSend = true;
    const w = this.estWaiters;
    this.estWaiters = [];
    for (const x of w) x.resolve();
    this.emit('established');
  }

  /**
   * Graceful: refuse new streams, wait for open ones to finish, then CONNECTION_CLOSE(NO_ERROR).
   * Forced: CONNECTION_CLOSE now; every open stream errors with ECONNABORTED.
   */
  async close(options: { graceful?: boolean; reason?: string } = {}): Promise<void> {
    if (this.finalized) return;
    const graceful = options.graceful ?? true;
    this.closedLocally ??= new TransportError(options.reason ?? 'QUIC connection closed locally', 'ECONNABORTED');
    if (graceful && this.failed === null) {
      // Wait until every stream is finished AND quiche has collected it (its data acknowledged):
      // after close() quiche sends nothing but CONNECTION_CLOSE, so unacked replies would be lost.
      const lingering = new Set(this.streams.keys());
      const linger = (st: QuicSessionStream): void => void lingering.add(st.id);
      this.on('streamClosed', linger);
      await new Promise<void>((resolve) => {
        const check = (): void => {
          if (!this.finalized) {
            if (this.streams.size > 0) return;
            for (const id of lingering) if (isCollected(this.q, id)) lingering.delete(id);
            if (lingering.size > 0) return;
          }
          this.off('serviced', check);
          this.off('closed', check);
          this.off('streamClosed', linger);
          resolve();
        };
        this.on('serviced', check);
        this.on('closed', check);
        check();
      });
    }
    if (this.finalized) return;
    const code = graceful ? AppError.NoError : AppError.Shutdown;
    try {
      this.q.close(true, code, Buffer.from(options.reason ?? (graceful ? 'bye' : 'shutdown')));
      this.closeSent = true;
    } catch {
      /* already closing */
    }
    if (!graceful) this.fail();
    this.ep.markDirty(this);
    await this.closedPromise();
  }

  /** Give up at once without telling the peer (it is unreachable): every user sees `err`. */
  abort(err: TransportError): void {
    if (this.finalized) return;
    this.closedLocally ??= err;
    this.finalize();
  }

  closedPromise(): Promise<void> {
    if (this.finalized) return Promise.resolve();
    return new Promise((resolve) => this.closeWaiters.push(resolve));
  }

  /** Every open stream, waiter and handshake promise learns the connection is gone. */
  private fail(): void {
    if (this.failed !== null) return;
    const q = this.q;
    this.failed = connectionClosedError(
      {
        timedOut: q.isTimedOut(),
        local: this.closedLocally !== null ? null : q.localError(),
        peer: q.peerError(),
        closedLocally: this.closedLocally,
        established: this.established,
      },
      this.init.serverName,
    );
    const err = this.failed;
    const streams = [...this.streams.values()];
    this.streams.clear();
    this.recent.clear();
    this.blocked.clear();
    this.pendingFins.length = 0;
    for (const s of streams) s.connectionLost(err);
    const w = this.waiters;
    this.waiters = [];
    for (const x of w) x.reject(err);
    const e = this.estWaiters;
    this.estWaiters = [];
    for (const x of e) x.reject(err);
    this.emit('failed', err);
  }

  /** quiche is done with the connection (or the endpoint is going away without waiting). */
  finalize(): void {
    if (this.finalized) return;
    this.fail();
    this.finalized = true;
    this.ep.deadlines.clear(this.timeoutDeadline);
    this.ep.deadlines.clear(this.ackDeadline);
    this.ep.deadlines.clear(this.finDeadline);
    this.ep.connectionClosed(this);
    const w = this.closeWaiters;
    this.closeWaiters = [];
    for (const r of w) r();
    this.emit('closed');
  }
}

function ignoreError(): void {
  // see accept()
}

/** The ALPN protocol quiche negotiated, '' for none. */
function alpnOf(q: Connection): string {
  const p = q.applicationProto();
  return p.length === 0 ? '' : Buffer.from(p).toString('latin1');
}

/** The max_ack_delay quiche advertises (its default, 25 ms): how long an ACK may wait at the peer. */
const PEER_MAX_ACK_DELAY_MS = 25;
/** Data that left this long ago is acknowledged unless the path is broken: no RTT lookup needed. */
const FIN_SURELY_ACKED_MAX_MS = 2_000;
/** The RTT read from quiche is reused for this long. */
const RTT_REFRESH_MS = 100;
/** Up to this many streams, a flush polls them without asking `isReadable()` first. */
const POLL_WITHOUT_ASKING = 2;
/** Above this many streams on a connection, mostly idle ones are read through the iterator. */
const ITERATE_ABOVE_STREAMS = 200;
/** Ids probed past the last new stream before discovery stops looking. */
const PROBE_MISSES = 4;
/** With paused streams, the iterator looks for far-away new streams once in this many flushes. */
const DISCOVER_EVERY = 16;
