// One Postgres session = one client-initiated bidirectional QUIC stream, exposed as a Duplex.
// Reads are pulled by the connection (it polls known streams when quiche says the connection is
// readable); writes go straight into quiche and whatever quiche cannot take yet waits in a small
// per-stream queue that the connection retries on every flush. Memory per stream is bounded by
// the quiche windows plus `pendingWriteLimit` plus the Duplex high-water marks.
import { Duplex } from 'node:stream';
import { quiche } from './native.js';
import type { Connection } from '@matrixai/quic/native/index.js';
import { TransportError } from '../session-stream.js';
import { duplexReadyState } from '../session-stream.js';
import type { ReadInto, SessionInfo, SessionStream, SocketReadyState, TlsDetails } from '../session-stream.js';
import type { PeerCertificate } from '../peer-certificate.js';
import { AppError, isQuicheError, streamErrorCode } from './errors.js';
import type { RecentNode } from './recent-streams.js';

/** What a stream needs from its connection (kept narrow so the two files stay independent). */
export interface StreamHost {
  readonly q: Connection;
  readonly pendingWriteLimit: number;
  /** Shared read buffer; valid only during one `pollRead` call. */
  readonly scratch: Uint8Array;
  markDirty(): void;
  /** The stream has data or a FIN waiting for quiche to accept it. */
  writeBlocked(s: QuicSessionStream): void;
  /** A destroyed stream closes gracefully: write its FIN at the next `service` (see `flushWrites`). */
  finishLater(id: number, sent: DataMark): void;
  /** Packet-building passes of the connection so far (see `DataMark`). */
  readonly drains: number;
  /**
   * Whether a FIN may be written now for a stream whose data was last handed to quiche as `sent`
   * (see `finMayGo`); when not, the connection wakes the stream again once it may.
   */
  finMayGo(sent: DataMark): boolean;
  /** The stream's read side stopped pulling because the consumer is full. */
  readPaused(s: QuicSessionStream, paused: boolean): void;
  /** The stream is finished in both directions (or aborted): forget it. */
  forget(s: QuicSessionStream): void;
  handshakeConfirmed(): Promise<void>;
  readonly isEstablished: boolean;
}

const EMPTY = new Uint8Array(0);

/**
 * When a stream last gave quiche data: the connection's packet-building pass count then, and the
 * time. A FIN written while that data is still unsent rides in the same STREAM frame; one written
 * after the data left must wait until the data is surely acknowledged. Reason: quiche 0.18 (and
 * its master, cloudflare/quiche#2525) counts a send side as complete once the final size is known
 * and every byte below it is acknowledged, ignoring whether the FIN-only frame was. If that data's
 * ACK arrives after a separate FIN-only frame left, the stream is collected, and if that frame was
 * lost it is never retransmitted: the peer reads everything and never sees the end
 * (test/quic-loss.test.ts). A FIN-only frame sent once all data is acknowledged is safe: only its
 * own ACK can complete the stream, and if it is lost quiche sends it again.
 */
export interface DataMark {
  drains: number;
  at: number;
}

/** The metadata of a stream: where it came from, what TLS agreed, and whether it was 0-RTT. */
export function quicSessionInfo(o: {
  local: { address: string; port: number };
  remote: { host: string; port: number };
  id: number;
  early: boolean;
  alpn: string | null;
  /** Where the peer's certificate comes from (the connection; read when asked). */
  peer: { readonly init: { readonly role: 'client' | 'server'; readonly verifiesPeer: boolean }; peerCertificate(): PeerCertificate | null };
  serverName: string | null;
  cidHex: string;
}): SessionInfo {
  const peer = o.peer;
  const tls: TlsDetails = {
    protocol: 'TLSv1.3',
    alpnProtocol: o.alpn,
    // A client verified the server during the handshake; a server has verified a client exactly
    // when the client presented a certificate that passed.
    authorized: peer.init.role === 'client' ? peer.init.verifiesPeer : peer.peerCertificate() !== null,
    servername: o.serverName,
    get peerCertificate(): PeerCertificate | null {
      return peer.peerCertificate();
    },
  };
  return {
    kind: 'quic',
    localAddress: o.local.address,
    localPort: o.local.port,
    remoteAddress: o.remote.host,
    remotePort: o.remote.port,
    tls,
    quic: { connectionId: o.cidHex, streamId: o.id, earlyData: o.early },
  };
}

export class QuicSessionStream extends Duplex implements SessionStream, RecentNode<QuicSessionStream> {
  readonly info: SessionInfo;
  /** The connection's read order (recent-streams.ts). */
  newer: QuicSessionStream | null = null;
  older: QuicSessionStream | null = null;
  listed = false;
  /** Read side is over: FIN consumed, reset by the peer, or shut down locally. */
  readEnded = false;
  /** The consumer's buffer is full: the connection stops polling this stream until `_read`. */
  paused = false;
  private writeEnded = false;
  /** Where reads go when the consumer asked for `readInto`; null: the Readable's push. */
  private target: ReadInto | null = null;
  private queue: Uint8Array[] = [];
  private queuedBytes = 0;
  private deferredCb: ((err?: Error | null) => void) | null = null;
  private finalCb: ((err?: Error | null) => void) | null = null;
  private forgotten = false;
  /** When data last went into quiche (see `DataMark`); drains -1: never. */
  private readonly sent: DataMark = { drains: -1, at: 0 };

  constructor(
    private readonly host: StreamHost,
    readonly id: number,
    info: SessionInfo,
  ) {
    super({ allowHalfOpen: true, readableHighWaterMark: 64 * 1024, writableHighWaterMark: 64 * 1024 });
    this.info = info;
  }

  /** True once the QUIC handshake is complete: from then on nothing on this stream can be a replay. */
  get isHandshakeConfirmed(): boolean {
    return this.host.isEstablished;
  }

  /** Resolves once the QUIC handshake is complete (immediately on 1-RTT streams). */
  handshakeConfirmed(): Promise<void> {
    return this.host.handshakeConfirmed();
  }

  // --- reading --------------------------------------------------------------------------------

  override _read(): void {
    if (this.paused) {
      this.paused = false;
      this.host.readPaused(this, false);
      this.host.markDirty();
    }
  }

  /**
   * Reads go into `target`'s buffers from now on, as a plain socket's do (tcp/read-into.ts): quiche
   * copies straight into them, with no Buffer copy, push or 'data' event per read. `pause()` stops
   * the polling at once, `resume()` starts it again. What was read before (a server reads a new
   * stream's first bytes before handing it out) reaches `target` first, on the next tick, as
   * 'data' would. False (nothing changed) with a 'data' listener or once the read side is over.
   */
  readInto(target: ReadInto): boolean {
    if (this.target !== null || this.readEnded || this.destroyed || this.listenerCount('data') > 0) return false;
    this.target = target;
    this.deliverBufferedSoon();
    return true;
  }

  /** What the Readable holds goes to the consumer on the next tick, as 'data' would. */
  private deliverBufferedSoon(): void {
    if (this.readableLength > 0) process.nextTick(() => this.deliverBuffered());
  }

  /** Hands what the Readable holds to the consumer (the bytes read before `readInto`). */
  private deliverBuffered(): void {
    const target = this.target;
    while (target !== null && !this.paused && this.readableLength > 0) {
      const chunk: Buffer | null = this.read();
      if (chunk === null) return;
      if (!target.callback(chunk.length, chunk)) this.pause();
    }
  }

  // Reading into a target, the Readable is never switched to flowing: it would hand what it
  // still holds to 'data' listeners, of which there are none.
  override pause(): this {
    if (this.target === null) return super.pause();
    if (!this.paused) {
      this.paused = true;
      this.host.readPaused(this, true);
    }
    return this;
  }

  override resume(): this {
    if (this.target === null) return super.resume();
    this._read();
    this.deliverBufferedSoon();
    return this;
  }

  /** Pulls everything quiche holds for this stream into the consumer, until it is full. */
  pollRead(): void {
    const q = this.host.q;
    const target = this.target;
    if (target !== null && this.readableLength > 0) this.deliverBuffered();
    while (!this.readEnded && !this.paused) {
      const buf = target === null ? this.host.scratch : target.buffer();
      let r: [number, boolean] | null;
      try {
        r = q.streamRecv(this.id, buf);
      } catch (err) {
        this.onRecvError(err);
        return;
      }
      if (r === null) return;
      const [n, fin] = r;
      let more = true;
      if (n > 0) more = target === null ? this.push(Buffer.from(buf.subarray(0, n))) : target.callback(n, buf);
      if (fin) {
        this.readEnded = true;
        this.push(null);
        // Without 'data' listeners nothing reads the Readable: this read emits its 'end'.
        if (target !== null) this.read(0);
        this.maybeForget();
        return;
      }
      if (!more) {
        this.paused = true;
        this.host.readPaused(this, true);
        return;
      }
      // quiche copies all contiguous data it has: a short read means the stream is drained,
      // which saves the extra call that would only return "done" (~1 µs each).
      if (n < buf.length) return;
    }
  }

  private onRecvError(err: unknown): void {
    const code = streamErrorCode(err, 'StreamReset');
    if (code !== null) {
      this.readEnded = true;
      this.destroy(new TransportError(`QUIC stream ${this.id} reset by peer (code ${code})`, 'ECONNRESET'));
      return;
    }
    // InvalidStreamState: quiche already collected the stream; nothing more will arrive.
    this.readEnded = true;
    this.destroy(new TransportError(`QUIC stream ${this.id} failed: ${errMessage(err)}`, 'ECONNRESET'));
  }

  // --- writing --------------------------------------------------------------------------------

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    if (this.queue.length === 0) {
      let n: number;
      try {
        n = this.sendNow(chunk);
      } catch (err) {
        cb(this.sendError(err));
        return;
      }
      if (n === chunk.length) {
        cb();
        return;
      }
      chunk = chunk.subarray(n);
    }
    this.queue.push(chunk);
    this.queuedBytes += chunk.length;
    this.host.writeBlocked(this);
    if (this.queuedBytes > this.host.pendingWriteLimit) this.deferredCb = cb;
    else cb();
  }

  /**
   * `write(chunk)` without the Writable's bookkeeping when nothing waits before it and quiche takes
   * it whole (it copies what it accepts); anything else goes through `write()`, behind what waits.
   */
  writeChunk(chunk: Buffer): boolean {
    if (this.queue.length === 0 && this.writableLength === 0 && !this.writableEnded && !this.destroyed) {
      let n: number;
      try {
        n = this.sendNow(chunk);
      } catch {
        return this.write(chunk); // write() fails the same way and reports it
      }
      if (n === chunk.length) return true;
      chunk = chunk.subarray(n);
    }
    return this.write(chunk);
  }

  /** Hands quiche what it takes of `chunk` now (it copies it) and returns how much; throws quiche's error. */
  private sendNow(chunk: Uint8Array): number {
    const n = this.host.q.streamSend(this.id, chunk, false) ?? 0;
    if (n > 0) this.markSent();
    this.host.markDirty();
    return n;
  }

  override _final(cb: (err?: Error | null) => void): void {
    // The FIN is written by the connection's next `service`, right before its packets are built
    // (see `flushWrites`), never here.
    this.finalCb = cb;
    this.host.writeBlocked(this);
    this.host.markDirty();
  }

  /** Bytes waiting for quiche to accept them. */
  get writableQueued(): number {
    return this.queuedBytes;
  }

  /**
   * Retries queued writes (and a pending FIN); returns true while something is still blocked.
   * Called only by the connection's `service`, after it fed quiche the turn's datagrams and read
   * the streams, and followed by the flush that builds packets. The FIN must not be written
   * anywhere else: quiche 0.18 counts a send side as complete once the final size is known and
   * every byte below it is acknowledged, even if the FIN itself was never sent. A FIN written
   * after all data was acknowledged completes the stream at once (when the peer's FIN was read
   * too), and the next `stream_recv` reaching the peer's FIN or the next ACK for its data —
   * both happen in `service` before packets are built — collects the stream and drops the
   * unsent FIN with it: the peer never sees the end (test/quic-fin.test.ts). Written here, the
   * FIN leaves in the packets built right after. Still exposed (quiche's to fix): a FIN that
   * cannot be packetized in that flush (congestion window full, all data in flight), and a
   * FIN-only packet lost after the stream was collected (quiche retransmits nothing for it).
   */
  flushWrites(): boolean {
    const q = this.host.q;
    try {
      while (this.queue.length > 0) {
        const head = this.queue[0]!;
        const n = q.streamSend(this.id, head, false) ?? 0;
        this.queuedBytes -= n;
        if (n > 0) this.markSent();
        if (n < head.length) {
          this.queue[0] = head.subarray(n);
          break;
        }
        this.queue.shift();
      }
      if (this.deferredCb !== null && this.queuedBytes <= this.host.pendingWriteLimit) {
        const cb = this.deferredCb;
        this.deferredCb = null;
        cb();
      }
      if (this.queue.length === 0 && this.finalCb !== null && !this.writeEnded) {
        // Not while data that already left may still be unacknowledged (see DataMark).
        if (!this.host.finMayGo(this.sent)) return true;
        // A FIN is accepted only when quiche has room to buffer it; retry next flush otherwise.
        if (q.streamSend(this.id, EMPTY, true) === null) return true;
        this.host.markDirty(); // the packets must be built in this turn (see above)
        this.writeEnded = true;
        const cb = this.finalCb;
        this.finalCb = null;
        cb();
        this.maybeForget();
      }
    } catch (err) {
      if (this.readEnded && this.queue.length === 0 && this.finalCb !== null && streamErrorCode(err, 'StreamStopped') !== null) {
        // The peer closed (EOF read) and stopped reading before our FIN: as with a socket whose
        // peer closed first, our end() simply completes.
        this.writeEnded = true;
        const cb = this.finalCb;
        this.finalCb = null;
        cb();
        this.maybeForget();
        return false;
      }
      const e = this.sendError(err);
      this.destroy(e);
      return false;
    }
    return this.queue.length > 0 || (this.finalCb !== null && !this.writeEnded);
  }

  private markSent(): void {
    this.sent.drains = this.host.drains;
    this.sent.at = Date.now();
  }

  private sendError(err: unknown): Error {
    const code = streamErrorCode(err, 'StreamStopped');
    if (code !== null) return new TransportError(`QUIC stream ${this.id} stopped by peer (code ${code})`, 'ECONNRESET');
    if (isQuicheError(err, 'InvalidStreamState') || isQuicheError(err, 'FinalSize')) {
      return new TransportError(`QUIC stream ${this.id} is closed`, 'EPIPE');
    }
    return new TransportError(`QUIC stream ${this.id} write failed: ${errMessage(err)}`, 'ECONNRESET');
  }

  // --- teardown -------------------------------------------------------------------------------

  /** Called by the connection when it is gone: the stream can only fail now. */
  connectionLost(err: Error): void {
    this.readEnded = true;
    this.writeEnded = true;
    this.forgotten = true;
    this.releaseCallbacks(err);
    if (!this.destroyed) this.destroy(err);
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    const clean = this.readEnded && this.writeEnded;
    if (!clean && !this.forgotten) {
      // Both directions must end, or quiche holds the stream (and its credit) forever.
      // destroy(err) aborts: RESET_STREAM for ours, STOP_SENDING for theirs. A plain destroy()
      // closes like net.Socket's: FIN after what quiche already holds (our unsent queue is
      // dropped, as a socket drops its userland buffer), so the peer reads EOF, not an error;
      // STOP_SENDING tells it we read no more. The FIN is written at the connection's next
      // `service`, for the reason given at `flushWrites`; one quiche cannot take becomes a reset.
      const q = this.host.q;
      const code = AppError.StreamCancelled;
      if (!this.readEnded) try { q.streamShutdown(this.id, quiche.Shutdown.Read, code); } catch { /* already closed */ }
      if (!this.writeEnded) {
        if (err === null) this.host.finishLater(this.id, this.sent);
        else try { q.streamShutdown(this.id, quiche.Shutdown.Write, code); } catch { /* already closed */ }
      }
      this.host.markDirty();
    }
    this.readEnded = true;
    this.writeEnded = true;
    this.queue = [];
    this.queuedBytes = 0;
    this.releaseCallbacks(err ?? new TransportError('QUIC stream destroyed', 'EPIPE'));
    this.forgetNow();
    cb(err);
  }

  private releaseCallbacks(err: Error): void {
    const d = this.deferredCb;
    const f = this.finalCb;
    this.deferredCb = null;
    this.finalCb = null;
    d?.(err);
    f?.(err);
  }

  private maybeForget(): void {
    if (this.readEnded && this.writeEnded) this.forgetNow();
  }

  private forgetNow(): void {
    if (this.forgotten) return;
    this.forgotten = true;
    this.host.forget(this);
  }

  readonly writeBatching = 'per-read' as const;

  /** A stream that began in 0-RTT early data may be a replay until its handshake is confirmed. */
  replayWindow(): Promise<void> | null {
    return this.info.quic?.earlyData === true && !this.host.isEstablished ? this.host.handshakeConfirmed() : null;
  }

  /**
   * quiche copies what `streamSend` accepts; only a write it could not take whole waits in our
   * queue (a view of the caller's Buffer), or in the Writable's buffer behind a deferred callback.
   */
  holdsWrittenBytes(): boolean {
    return this.queue.length > 0 || this.writableLength > 0;
  }

  // net.Socket look-alikes for drivers; QUIC has nothing to configure here.
  get readyState(): SocketReadyState { return duplexReadyState(this); }
  setNoDelay(_noDelay?: boolean): this { return this; }
  setKeepAlive(_enable?: boolean, _initialDelay?: number): this { return this; }
  ref(): this { return this; }
  unref(): this { return this; }
}

/**
 * Writes the FIN of a gracefully destroyed stream (the stream object is gone), at the point
 * described at `flushWrites`; a FIN quiche cannot take becomes a reset, as a socket's close would.
 */
export function writeFin(q: Connection, id: number): void {
  try {
    if (q.streamSend(id, EMPTY, true) !== null) return;
  } catch {
    return; // stopped by the peer or already gone: nothing to finish
  }
  try { q.streamShutdown(id, quiche.Shutdown.Write, AppError.StreamCancelled); } catch { /* already closed */ }
}

function errMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
