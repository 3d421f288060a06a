// The session manager: up to N QUIC connections over one or more poolers, up to M session
// streams each. All decisions happen in `pump()`: hand waiting acquires to ready connections with
// free capacity (least loaded first), open connections for demand nobody can serve, open one more
// in the background when the open ones fill up, keep `minConnections`, and refuse waiters when no
// pooler can be reached. Connection state changes only through `onReady`/`onGone`.
import { EventEmitter } from 'node:events';
import { QuicTicketStore, TransportError } from '@quicpool/transport';
import type { QuicConnection, QuicSessionStream } from '@quicpool/transport';
import { certificatePolicy, checkPin } from './certificates.js';
import type { CertificatePolicy } from './certificates.js';
import { PoolerEndpoint, parseEndpoint } from './endpoints.js';
import { resolveManagerOptions } from './options.js';
import type { ResolvedManagerOptions, SessionManagerOptions } from './options.js';
import { StartupHints } from './fast-start.js';
import { emptyCounters, unreachableError } from './stats.js';
import type { ManagerCounters, SessionManagerEvents, SessionManagerStats } from './stats.js';
import { abortError, discardStream, newWaiter, WaitQueue } from './waiters.js';
import type { Waiter } from './waiters.js';

/** Anything that hands out open session streams (the manager, or your own for tests). */
export interface SessionSource {
  acquire(options?: AcquireOptions): Promise<QuicSessionStream>;
  /** What QuicClient learned about logins (enables its pipelined startup under trust). */
  readonly startupHints?: StartupHints;
}

export interface AcquireOptions {
  /** Give up waiting (the promise rejects with an AbortError). */
  readonly signal?: AbortSignal;
}

interface Managed {
  conn: QuicConnection | null;
  readonly ep: PoolerEndpoint;
  inUse: number;
  /** Most concurrent streams the peer was seen to grant (0 = not known yet). */
  peerMax: number;
  ready: boolean;
  established: boolean;
  closing: boolean;
  gone: boolean;
  idleSince: number;
  pinError: TransportError | null;
}


const MAX_ATTEMPTS = 3;

export class SessionManager extends EventEmitter<SessionManagerEvents> implements SessionSource {
  readonly options: ResolvedManagerOptions;
  /** Logins the pooler accepted without a password (shared via the `startupHints` option). */
  readonly startupHints: StartupHints;
  private readonly endpoints: PoolerEndpoint[];
  private readonly policy: CertificatePolicy;
  private readonly conns = new Set<Managed>();
  private readonly waiters: WaitQueue;
  private readonly counters: ManagerCounters = emptyCounters();
  private inUse = 0;
  private closed = false;
  private sweepTimer: NodeJS.Timeout | null = null;
  private drainWaiters: Array<() => void> = [];
  /** Streams per connection the poolers were last seen to grant (capped at M); 0 = not known. */
  private learnedCap = 0;

  constructor(options: SessionManagerOptions) {
    super();
    this.options = resolveManagerOptions(options);
    this.policy = certificatePolicy(options);
    this.startupHints = options.startupHints ?? new StartupHints();
    this.waiters = new WaitQueue(this.options.acquireTimeoutMs, () => {
      this.counters.acquireFailures++;
      const { acquireTimeoutMs: ms, maxConnections: n, streamsPerConnection: mm } = this.options;
      return new TransportError(
        `timed out after ${ms} ms waiting for a QUIC session stream (${this.inUse} in use; limit ${n} connections x ${mm} streams)`,
        'ETIMEDOUT',
      );
    });
    const settings = {
      policy: this.policy,
      serverName: options.serverName,
      earlyData: this.options.earlyData,
      tickets: options.tickets ?? new QuicTicketStore(),
      quic: options.quic ?? {},
      retryMs: this.options.endpointRetryMs,
    };
    this.endpoints = options.endpoints.map((e) => new PoolerEndpoint(parseEndpoint(e), settings));
    if (this.options.idleTimeoutMs > 0) {
      this.sweepTimer = setInterval(() => this.sweepIdle(), Math.max(50, Math.min(5_000, this.options.idleTimeoutMs / 2)));
      this.sweepTimer.unref();
    }
  }

  /** The manager logs in with a client certificate (`cert` or `certFile`; the pooler may map it to users). */
  get presentsCertificate(): boolean {
    return this.policy.clientCert !== undefined;
  }

  /** An open session stream (a Duplex): carry exactly one Postgres session on it, then end it. */
  acquire(options: AcquireOptions = {}): Promise<QuicSessionStream> {
    if (this.closed) return Promise.reject(new TransportError('quicpool session manager is closed', 'ECONNABORTED'));
    if (options.signal?.aborted === true) return Promise.reject(abortError(options.signal));
    return new Promise((resolve, reject) => {
      const w = newWaiter(resolve, reject, options.signal);
      const m = this.waiters.length === 0 ? this.pickReady() : null;
      if (m !== null) {
        this.assign(m, w);
        if (this.conns.size < this.options.maxConnections) this.pump(); // background pre-open
        return;
      }
      this.counters.waits++;
      this.waiters.add(w);
      this.pump();
    });
  }

  /** Opens `minConnections` (at least one) connections now and waits until they can carry streams. */
  async warm(): Promise<void> {
    const want = Math.max(1, this.options.minConnections);
    while (this.conns.size < want) {
      const ep = this.pickEndpoint();
      if (ep === null) break;
      this.open(ep);
    }
    const deadline = performance.now() + (this.options.acquireTimeoutMs || 30_000);
    while (![...this.conns].some((m) => m.ready) && performance.now() < deadline) {
      if (this.conns.size === 0) throw unreachableError(this.endpoints);
      await new Promise((r) => setTimeout(r, 2));
    }
  }

  stats(): SessionManagerStats {
    let connections = 0;
    let connecting = 0;
    for (const m of this.conns) if (m.ready) connections++; else connecting++;
    return {
      ...this.counters,
      connections,
      connecting,
      streamsInUse: this.inUse,
      waiting: this.waiters.length,
      endpoints: this.endpoints.map((e) => ({
        endpoint: e.label, connections: e.connections, down: e.isDown, lastError: e.lastError?.message ?? null,
      })),
    };
  }

  /** Live connections (for tests and diagnostics): close one to simulate its loss. */
  connections(): QuicConnection[] {
    const out: QuicConnection[] = [];
    for (const m of this.conns) if (m.conn !== null && m.ready) out.push(m.conn);
    return out;
  }

  /** Resolves once no session stream is in use (or after `timeoutMs`): true when drained. */
  drained(timeoutMs = 5_000): Promise<boolean> {
    if (this.inUse === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        this.drainWaiters = this.drainWaiters.filter((d) => d !== done);
        resolve(false);
      }, timeoutMs);
      this.drainWaiters.push(done);
    });
  }

  /**
   * Refuses new acquires and rejects waiting ones. Graceful (default): waits up to `timeoutMs`
   * (5,000) for the streams in use to end, then closes every connection with NO_ERROR, leaving
   * quiche at most 500 ms to see the last acknowledgements. Forced: every open stream errors now.
   */
  async close(options: { graceful?: boolean; timeoutMs?: number } = {}): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.sweepTimer !== null) clearInterval(this.sweepTimer);
    const err = new TransportError('quicpool session manager is closed', 'ECONNABORTED');
    for (const w of this.waiters.takeAll()) w.reject(err);
    const graceful = options.graceful ?? true;
    if (graceful) await this.drained(options.timeoutMs ?? 5_000);
    await Promise.all(this.endpoints.map((e) => e.close({ graceful, timeoutMs: 500 })));
  }

  // --- decisions ------------------------------------------------------------------------------

  private pump(): void {
    if (this.closed) return;
    while (this.waiters.length > 0) {
      const m = this.pickReady();
      if (m === null) break;
      this.assign(m, this.waiters.take()!);
    }
    const expected = this.learnedCap > 0 ? this.learnedCap : this.options.streamsPerConnection;
    let pending = 0;
    for (const m of this.conns) if (!m.ready) pending += expected;
    while (this.waiters.length > pending && this.conns.size < this.options.maxConnections) {
      const ep = this.pickEndpoint();
      if (ep === null) break;
      this.open(ep);
      pending += expected;
    }
    if (pending === 0 && this.conns.size < this.options.maxConnections && this.nearlyFull()) {
      const ep = this.pickEndpoint();
      if (ep !== null) this.open(ep);
    }
    while (this.conns.size < this.options.minConnections) {
      const ep = this.pickEndpoint();
      if (ep === null) break;
      this.open(ep);
    }
    if (this.waiters.length > 0 && this.conns.size === 0) {
      const err = unreachableError(this.endpoints);
      this.counters.acquireFailures += this.waiters.length;
      for (const w of this.waiters.takeAll()) w.reject(err);
    }
  }

  /** Background pre-open: the ready connections' capacity is mostly in use. */
  private nearlyFull(): boolean {
    let cap = 0;
    let used = 0;
    for (const m of this.conns) {
      if (!m.ready || m.closing) continue;
      cap += this.capacity(m);
      used += m.inUse;
    }
    return cap > 0 && used >= cap * this.options.preOpenRatio;
  }

  private capacity(m: Managed): number {
    const M = this.options.streamsPerConnection;
    return m.peerMax > 0 ? Math.min(M, m.peerMax) : M;
  }

  private pickReady(): Managed | null {
    let best: Managed | null = null;
    for (const m of this.conns) {
      if (!m.ready || m.closing || m.inUse >= this.capacity(m)) continue;
      if (best === null || m.inUse < best.inUse) best = m;
    }
    return best;
  }

  /** The endpoint in rotation with the fewest connections (list order breaks ties). */
  private pickEndpoint(): PoolerEndpoint | null {
    let best: PoolerEndpoint | null = null;
    for (const e of this.endpoints) {
      if (e.isDown) continue;
      if (best === null || e.connections < best.connections) best = e;
    }
    return best;
  }

  // --- connections ----------------------------------------------------------------------------

  private open(ep: PoolerEndpoint): void {
    const m: Managed = {
      conn: null, ep, inUse: 0, peerMax: 0, ready: false, established: false, closing: false, gone: false,
      idleSince: performance.now(), pinError: null,
    };
    this.conns.add(m);
    ep.connections++;
    this.counters.handshakes++;
    ep.endpoint().then(
      (qe) => {
        if (this.closed || m.gone) return;
        let conn: QuicConnection;
        try {
          conn = qe.connect();
        } catch (e) {
          return this.onGone(m, asError(e));
        }
        m.conn = conn;
        const ms = this.options.connectTimeoutMs;
        const timer = ms > 0 ? setTimeout(() => {
          if (!m.established) conn.abort(new TransportError(`QUIC handshake with ${ep.label} timed out after ${ms} ms`, 'ETIMEDOUT'));
        }, ms) : null;
        timer?.unref();
        conn.once('established', () => {
          if (timer !== null) clearTimeout(timer);
          this.onEstablished(m);
        });
        conn.once('failed', (err: Error) => {
          if (timer !== null) clearTimeout(timer);
          this.onGone(m, err);
        });
        // 0-RTT: a resumed connection has stream credit before its handshake completes. Use it
        // only while the endpoint is trusted (a ticket for a pooler that just died would fail).
        if (this.options.earlyData && !ep.suspect && conn.streamCredit() > 0) this.onReady(m);
      },
      (err: unknown) => this.onGone(m, asError(err)),
    );
  }

  private onEstablished(m: Managed): void {
    const conn = m.conn;
    if (conn === null || m.gone) return;
    const pinError = checkPin(conn, this.policy);
    if (pinError !== null) {
      m.pinError = pinError;
      void conn.close({ graceful: false, reason: pinError.message });
      return;
    }
    m.established = true;
    if (conn.isResumed) this.counters.resumptions++;
    if (m.ep.markUp()) this.emit('endpointUp', { endpoint: m.ep.label });
    this.emit('connectionOpen', { endpoint: m.ep.label, resumed: conn.isResumed });
    this.onReady(m);
  }

  private onReady(m: Managed): void {
    if (m.conn !== null) m.peerMax = Math.max(m.peerMax, m.conn.streams.size + m.conn.streamCredit());
    if (m.peerMax > 0) this.learnedCap = this.capacity(m);
    if (m.ready) return this.pump();
    m.ready = true;
    this.pump();
  }

  /** The connection failed, was lost, or closed: forget it, judge the endpoint, replace it if needed. */
  private onGone(m: Managed, err: Error): void {
    if (m.gone) return;
    m.gone = true;
    this.conns.delete(m);
    m.ep.connections--;
    if (this.closed || m.closing) return this.pump();
    const error = m.pinError ?? err;
    if (!m.established) {
      this.counters.connectionFailures++;
      m.ep.markFailed(error);
      this.emit('endpointDown', { endpoint: m.ep.label, error, retryInMs: Math.round(m.ep.downUntil - performance.now()) });
    } else {
      this.counters.connectionsLost++;
      m.ep.suspect = true;
      this.emit('connectionLost', { endpoint: m.ep.label, error, streamsInUse: m.inUse });
      // Replace a connection that was carrying sessions at once: its users will be back.
      if (m.inUse > 0 && this.conns.size < this.options.maxConnections) {
        const ep = this.pickEndpoint();
        if (ep !== null) this.open(ep);
      }
    }
    this.pump();
  }

  private sweepIdle(): void {
    const now = performance.now();
    let open = 0;
    for (const m of this.conns) if (!m.closing) open++;
    for (const m of this.conns) {
      if (open <= this.options.minConnections) return;
      if (!m.ready || m.closing || m.inUse > 0 || now - m.idleSince < this.options.idleTimeoutMs) continue;
      m.closing = true;
      open--;
      this.counters.idleClosed++;
      void m.conn?.close({ graceful: true });
    }
  }

  // --- streams --------------------------------------------------------------------------------

  private assign(m: Managed, w: Waiter): void {
    const conn = m.conn!;
    m.inUse++;
    this.inUse++;
    conn.openStream().then(
      (s) => {
        m.peerMax = Math.max(m.peerMax, conn.streams.size + conn.streamCredit());
        let released = false;
        s.once('close', () => {
          if (released) return;
          released = true;
          m.inUse--;
          this.inUse--;
          if (m.inUse === 0) m.idleSince = performance.now();
          if (this.inUse === 0) for (const d of this.drainWaiters.splice(0)) d();
          this.pump();
        });
        if (w.signal?.aborted === true) {
          discardStream(s);
          return w.reject(abortError(w.signal));
        }
        this.counters.acquired++;
        w.resolve(s);
      },
      (err: Error) => {
        m.inUse--;
        this.inUse--;
        // No stream was opened, so nothing was sent: try another connection.
        if (++w.attempts < MAX_ATTEMPTS && !this.closed && w.signal?.aborted !== true) {
          this.waiters.add(w, true);
          this.pump();
        } else {
          this.counters.acquireFailures++;
          w.reject(err);
        }
      },
    );
  }
}

function asError(e: unknown): Error {
  return e instanceof Error ? e : new Error(String(e));
}
