// One QUIC connection: the quiche state machine plus the streams on it. The endpoint feeds it
// datagrams (`receive`) and, once per event-loop turn, asks it to do its stream work (`service`)
// before draining quiche's outgoing packets; the connection never touches the socket itself.
import { EventEmitter } from 'node:events';
import type { Connection, Host, RecvInfo } from '@matrixai/quic/native/index.js';
import { TransportError } from '../session-stream.js';
import { AppError, connectionClosedError } from './errors.js';
import { QuicSessionStream, quicSessionInfo, writeFin } from './stream.js';
import type { StreamHost } from './stream.js';
import { SeenIds, isCollected } from './stream-ids.js';
import { LazyTimer } from './timer.js';

/** What a connection needs from its endpoint. */
export interface ConnectionHost {
  readonly scratch: Uint8Array;
  readonly pendingWriteLimit: number;
  /** Something local (a write, a timer, a close) needs packets sent in the next flush. */
  markDirty(c: QuicConnection): void;
  /** A datagram arrived: service the connection; its ACK may wait briefly for a reply. */
  markReceived(c: QuicConnection): void;
  /** Sends one datagram now, outside the flush (a repeated CONNECTION_CLOSE). */
  sendRaw(buf: Buffer, len: number, to: Host, closeEcho: boolean): void;
  /** quiche refused `n` queued datagrams (undecryptable, invalid, too late). */
  countRejected(n: number): void;
  /** A peer stream was already reset when discovered, so it was never handed out. */
  countResetBeforeAccept(): void;
  /** The connection reached quiche's closed state: drop its routes and timers. */
  connectionClosed(c: QuicConnection): void;
  /** Address this endpoint is bound to (for SessionInfo). */
  localAddress(): { address: string; port: number };
}

export interface ConnectionInit {
  role: 'client' | 'server';
  cidHex: string;
  local: Host;
  remote: Host;
  serverName: string | null;
  earlyDataPolicy: 'accept' | 'defer';
  /** Client: a session ticket was set, so data written before the handshake goes out as 0-RTT. */
  resuming: boolean;
  /** The peer's certificate was verified (client with verification on; servers see no client cert). */
  authorized: boolean;
}

interface OpenWaiter {
  resolve(s: QuicSessionStream): void;
  reject(e: Error): void;
}

/** Limit on `open()` calls waiting for stream credit, so a stuck peer cannot grow memory. */
const MAX_OPEN_WAITERS = 100_000;

export class QuicConnection extends EventEmitter implements StreamHost {
  readonly streams = new Map<number, QuicSessionStream>();
  /** Set by the endpoint while the connection is queued for the next flush. */
  dirty = false;
  /** Something other than received packets wants a send in the next flush. */
  wantSend = false;
  /** Endpoint's delayed-ACK timer for this connection, if armed. */
  ackTimer: NodeJS.Timeout | null = null;
  /** Endpoint bookkeeping: routing keys of this connection's CIDs. */
  readonly routeKeys: number[] = [];
  lastSendAt = 0;
  ticketPolled = false;
  readonly pendingWriteLimit: number;
  readonly scratch: Uint8Array;
  private readonly blocked = new Set<QuicSessionStream>();
  /** Streams destroyed without error whose FIN is still to be written (see `finishLater`). */
  private pendingFins: number[] = [];
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
  closeTo: Host | null = null;
  private closeEchoRx = 0;
  private estWaiters: Array<{ resolve(): void; reject(e: Error): void }> = [];
  private closeWaiters: Array<() => void> = [];
  private readonly timer: LazyTimer;
  private rxHost = '';
  private rxPort = -1;
  private rxInfo: RecvInfo;
  /** Datagrams of this turn not yet given to quiche (established connections; see `receive`). */
  private rxQueue: Buffer[] = [];
  private rxHosts: string[] = [];
  private rxPorts: number[] = [];
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
    this.timer = new LazyTimer(
      () => this.q.timeout(),
      () => {
        this.q.onTimeout();
        this.ep.markDirty(this);
      },
    );
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
  /** Why the connection failed or closed, once it has. */
  get error(): TransportError | null {
    return this.failed;
  }

  // --- endpoint-facing ------------------------------------------------------------------------

  /**
   * One datagram for this connection; false when quiche rejected it. Once established, datagrams
   * are only queued here and fed to quiche together at the start of the flush (`service`): all
   * `recv` calls of a turn in a row instead of alternating with the socket's recvmsg syscalls and
   * dgram's callbacks. During the handshake they go in at once (0-RTT discovery, state checks).
   */
  receive(msg: Buffer, fromHost: string, fromPort: number): boolean {
    if (this.closePacket !== null) {
      this.echoClose();
      return true;
    }
    if (this.established && !this.finalized) {
      this.rxQueue.push(msg);
      this.rxHosts.push(fromHost);
      this.rxPorts.push(fromPort);
      this.ep.markReceived(this);
      return true;
    }
    const ok = this.recvOne(msg, fromHost, fromPort);
    if (!this.established && this.init.role === 'server') this.handshakeStep();
    this.ep.markReceived(this);
    return ok;
  }

  private recvOne(msg: Buffer, fromHost: string, fromPort: number): boolean {
    if (fromPort !== this.rxPort || fromHost !== this.rxHost) {
      // A new path (first packet, or the peer's address changed: migration). Allocate only then.
      this.rxHost = fromHost;
      this.rxPort = fromPort;
      this.rxInfo = { from: { host: fromHost, port: fromPort }, to: this.init.local };
    }
    try {
      this.q.recv(msg, this.rxInfo);
      return true;
    } catch {
      // Undecryptable or invalid packets are dropped by quiche; fatal errors (TlsFail) close the
      // connection, which `afterSend` notices through isDraining/isClosed.
      return false;
    }
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
  keepClosePacket(buf: Buffer, len: number, to: Host): void {
    this.closePacket = Buffer.from(buf.subarray(0, len));
    this.closeTo = { host: to.host, port: to.port };
  }

  /** Local close under way: send what quiche has at once (no delayed ACK). */
  get closingLocally(): boolean {
    return this.closeSent;
  }

  /** Feeds quiche the datagrams queued by `receive` since the last flush. */
  private recvQueued(): void {
    const msgs = this.rxQueue;
    const n = msgs.length;
    if (n === 0) return;
    const hosts = this.rxHosts;
    const ports = this.rxPorts;
    let rejected = 0;
    for (let i = 0; i < n; i++) if (!this.recvOne(msgs[i]!, hosts[i]!, ports[i]!)) rejected++;
    msgs.length = 0;
    hosts.length = 0;
    ports.length = 0;
    if (rejected > 0) this.ep.countRejected(rejected);
  }

  /** Server, during the handshake: streams that show up now arrived in 0-RTT early data. */
  private handshakeStep(): void {
    if (this.q.isEstablished()) {
      this.onEstablished();
      return;
    }
    if (this.init.earlyDataPolicy === 'accept' && this.q.isInEarlyData() && this.q.isReadable()) this.discover(true);
  }

  /** Stream work of one flush: read what arrived, retry blocked writes. */
  service(): void {
    if (this.finalized) return;
    this.recvQueued();
    const q = this.q;
    if (!this.established && q.isEstablished()) this.onEstablished();
    if (q.isReadable()) {
      // Polling a stream costs ~0.5 µs per known stream, the readable() iterator ~3.5 µs per
      // readable stream: poll while most streams are busy, iterate when most are idle (a pooler
      // connection with hundreds of idle sessions).
      let active = 0;
      if (this.streams.size > 7 * this.activeEstimate + 4) {
        active = this.readViaIterator();
      } else {
        for (const s of this.streams.values()) {
          if (s.readEnded || s.paused || !q.streamReadable(s.id)) continue;
          active++;
          s.pollRead();
        }
        // Still readable: a stream we do not know yet (server side), or a paused consumer.
        // Before the handshake completes, anything new can only have come as 0-RTT early data.
        if (this.init.role === 'server' && q.isReadable()) this.discover(!this.established);
      }
      this.activeEstimate = (this.activeEstimate * 3 + active) / 4;
    }
    // FINs go into quiche only here, after the reads and right before the flush builds packets
    // (see QuicSessionStream.flushWrites).
    if (this.blocked.size > 0) this.retryBlockedWrites();
    if (this.pendingFins.length > 0) this.writePendingFins();
    if (this.waiters.length > 0) this.grantWaiters();
  }

  private writePendingFins(): void {
    const ids = this.pendingFins;
    this.pendingFins = [];
    for (const id of ids) writeFin(this.q, id);
    this.ep.markDirty(this); // the packets must be built in this turn
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
    this.timer.update(now);
  }

  // --- StreamHost -----------------------------------------------------------------------------

  markDirty(): void {
    this.ep.markDirty(this);
  }
  writeBlocked(s: QuicSessionStream): void {
    this.blocked.add(s);
  }
  finishLater(id: number): void {
    this.pendingFins.push(id);
    this.ep.markDirty(this);
  }
  readPaused(_s: QuicSessionStream, paused: boolean): void {
    // A paused stream stays readable in quiche; nothing to count: polling skips it by its flag.
    void paused;
  }
  forget(s: QuicSessionStream): void {
    if (this.streams.get(s.id) !== s) return;
    this.streams.delete(s.id);
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
      }
    }
    if (unknown && this.init.role === 'server') this.discover(!this.established);
    return active;
  }

  /** Server: create session streams for peer streams quiche reports that we have not seen. */
  private discover(early: boolean): void {
    if (this.init.earlyDataPolicy === 'defer' && !this.established) return;
    for (const id of this.q.readable()) {
      if (this.streams.has(id) || this.seen.has(id)) continue;
      // Only client-initiated bidirectional streams carry sessions (ids 0, 4, 8 ...).
      if ((id & 3) !== 0) continue;
      this.seen.add(id);
      const s = this.newStream(id, early);
      // A peer may open a stream and reset it before we read it: pollRead() then destroys the
      // stream with an error that nobody could have listened for yet. Such a stream is never
      // handed out, and its error (emitted on the next tick) lands on this no-op listener.
      s.on('error', ignoreError);
      s.pollRead();
      if (s.destroyed) {
        this.ep.countResetBeforeAccept();
        continue;
      }
      s.off('error', ignoreError);
      if (this.onStream !== null) this.onStream(s);
      else s.destroy();
    }
  }

  private newStream(id: number, early: boolean): QuicSessionStream {
    const local = this.ep.localAddress();
    const remote = this.rxPort >= 0 ? { host: this.rxHost, port: this.rxPort } : this.init.remote;
    const p = this.q.applicationProto();
    const info = quicSessionInfo({
      local, remote, id, early,
      alpn: p.length === 0 ? null : Buffer.from(p).toString('latin1'),
      authorized: this.init.authorized, serverName: this.init.serverName, cidHex: this.init.cidHex,
    });
    const s = new QuicSessionStream(this, id, info);
    this.streams.set(id, s);
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
    this.rxQueue.length = 0;
    this.rxHosts.length = 0;
    this.rxPorts.length = 0;
    this.timer.cancel();
    if (this.ackTimer !== null) clearTimeout(this.ackTimer);
    this.ackTimer = null;
    this.ep.connectionClosed(this);
    const w = this.closeWaiters;
    this.closeWaiters = [];
    for (const r of w) r();
    this.emit('closed');
  }
}

function ignoreError(): void {
  // see discover()
}
