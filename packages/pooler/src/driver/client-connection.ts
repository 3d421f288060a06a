// The thin driver of one client session: decodes the client's bytes into events for the
// ClientSession state machine and carries out its actions on the stream, the pool and the clock.
import net from 'node:net';
import { decodeBackendMessage, decodeStartupPacket, FrontendDecoder, ProtocolError } from '@quicpool/wire';
import type { RawMessage } from '@quicpool/wire';
import { QuicSessionStream, upgradeToTls } from '@quicpool/transport';
import type { SessionStream } from '@quicpool/transport';
import type { Backend, BackendOwner } from '../backend/backend.js';
import { BackendLoginError } from '../backend/connect.js';
import type { Pool, Waiter } from '../pool/pool.js';
import { ClientSession } from '../session/client-session.js';
import type { SessionAction, SessionEvent, SessionTimer } from '../session/types.js';
import { BatchedWriter } from './batched-writer.js';
import type { PoolerCore } from './pooler-core.js';

type PauseReason = 'waiting' | 'backendFull' | 'tls';

/**
 * A client waiting for a backend is paused only once this much of its input is queued: a client
 * that sends one request and waits (the common case) costs no pause/resume per transaction.
 */
const WAITING_PAUSE_BYTES = 64 * 1024;

export class ClientConnection implements Waiter, BackendOwner {
  readonly session: ClientSession;
  private stream: SessionStream;
  private writer: BatchedWriter;
  private readonly decoder: FrontendDecoder;
  backend: Backend | null = null;
  private waitingForBackend = false;
  private pool: Pool | null = null;
  private cancelProcessId = 0;
  private readonly queue: SessionEvent[] = [];
  private running = false;
  /** The session threw once (malformed bytes found late): it got its 08P01; a second throw is a bug. */
  private broken = false;
  private closed = false;
  private readonly pauses = new Set<PauseReason>();
  private backendPaused: Backend | null = null;
  private readonly timers = new Map<SessionTimer, NodeJS.Timeout>();
  /** The (database, user) admission this session holds, released once on close. */
  admittedPool: string | null = null;
  /** Traffic not yet added to the pool's totals (added per transaction, and at close). */
  private receivedBytes = 0;
  private sentBytes = 0;
  private queriesCounted = 0;
  private queryMicros = 0;
  /** performance.now() when the session's 'query' timer was armed (a request went out), else -1. */
  private queryStartedAt = -1;
  /** The login is over (logged in, or its failure reported): the per-event login check stops. */
  private loginDone = false;

  constructor(
    stream: SessionStream,
    private readonly core: PoolerCore,
  ) {
    this.stream = stream;
    this.writer = new BatchedWriter(stream);
    this.decoder = new FrontendDecoder({ maxMessageSize: core.config.maxMessageSize });
    this.session = new ClientSession(core.sessionContext(this, stream.info.kind));
    this.bind(stream);
    // Startup and authentication are bounded in time (Postgres's authentication_timeout).
    const auth = setTimeout(() => this.dispatch({ type: 'timeout', timer: 'authentication' }), core.config.authTimeoutMs);
    auth.unref();
    this.timers.set('authentication', auth);
  }

  private bind(stream: SessionStream): void {
    stream.on('data', this.onData);
    stream.on('end', this.onGone);
    stream.on('error', this.onGone);
    stream.on('close', this.onGone);
  }

  private unbind(stream: SessionStream): void {
    stream.off('data', this.onData);
    stream.off('end', this.onGone);
    stream.off('error', this.onGone);
    stream.off('close', this.onGone);
  }

  private readonly onGone = (): void => this.dispatch({ type: 'clientClosed' });

  private readonly onData = (chunk: Buffer): void => {
    this.receivedBytes += chunk.length;
    try {
      this.decoder.push(chunk);
      for (let m = this.decoder.nextRaw(); m !== undefined && !this.closed && !this.pauses.has('tls'); m = this.decoder.nextRaw()) {
        this.onClientMessage(m);
      }
      if (this.waitingForBackend && this.session.pendingBytes >= WAITING_PAUSE_BYTES && !this.pauses.has('waiting')) this.pause('waiting');
    } catch (e) {
      this.dispatch({ type: 'protocolError', message: e instanceof ProtocolError ? e.message : String(e) });
    }
    // What this chunk caused leaves now (one write per stream, as at the end of the turn) instead of
    // in a nextTick. Only for sockets: an in-memory peer gets our bytes synchronously, inside the
    // write() that delivered its own, before it is ready for them.
    if (this.stream instanceof net.Socket) BatchedWriter.flushAll();
  };

  private onClientMessage(m: RawMessage): void {
    if (m.type === 0) this.dispatch({ type: 'startupPacket', packet: decodeStartupPacket(m.bytes) });
    else this.dispatch({ type: 'clientMessage', message: m });
  }

  /** Events are handled one at a time, in order, even when an action causes another event. */
  dispatch(e: SessionEvent): void {
    if (this.running) {
      this.queue.push(e);
      return;
    }
    this.running = true;
    let first: SessionEvent | undefined = e;
    if (this.queue.length > 0) {
      // Left over by a throw: those events still go first.
      this.queue.push(e);
      first = this.queue.shift();
    }
    try {
      // The event itself first, then whatever its actions queued (the queue stays empty nearly always).
      for (let ev = first; ev !== undefined; ev = this.queue.length > 0 ? this.queue.shift() : undefined) {
        const phase = this.session.phase;
        const actions = this.session.handle(ev);
        if (!this.loginDone) this.loginProgress(phase, actions);
        for (const a of actions) this.perform(a);
      }
    } catch (e) {
      // Malformed client bytes can surface late (a queued Parse or Bind is only decoded when a
      // backend arrives, inside a pool or socket callback): they end this session with 08P01
      // instead of escaping into that callback, where they would crash the pooler.
      this.queue.length = 0;
      this.running = false;
      if (this.broken) throw e;
      this.broken = true;
      this.dispatch({ type: 'protocolError', message: e instanceof Error ? e.message : String(e) });
    } finally {
      this.running = false;
    }
  }

  private perform(a: SessionAction): void {
    switch (a.type) {
      case 'sendToClient':
        this.sentBytes += a.bytes.length;
        if (!this.writer.write(a.bytes) && this.backend !== null && this.backendPaused === null) {
          // Backpressure: stop reading the server until the client catches up.
          const b = this.backend;
          this.backendPaused = b;
          b.socket.pause();
          this.stream.once('drain', () => this.resumeBackend());
        }
        return;
      case 'sendToBackend': {
        const b = this.backend;
        if (b === null) return;
        if (!b.write(a.bytes) && !this.pauses.has('backendFull')) {
          this.pause('backendFull');
          b.socket.once('drain', () => this.resume('backendFull'));
        }
        return;
      }
      case 'startTls':
        return this.startTls();
      case 'cancel': {
        const early = unconfirmedEarlyData(this.stream);
        if (early === null) return this.core.cancel(a.processId, a.secretKey);
        // 0-RTT replay policy: a replayed CancelRequest never sees its handshake confirmed.
        early.handshakeConfirmed().then(() => this.core.cancel(a.processId, a.secretKey), () => undefined);
        return;
      }
      case 'authenticated':
        return this.onAuthenticated(a.database, a.user);
      case 'requestBackend':
        if (this.pool === null) return;
        this.waitingForBackend = true;
        this.pool.acquire(this);
        // Only a real wait with much queued pauses the client (see WAITING_PAUSE_BYTES; onData checks again).
        if (this.waitingForBackend && this.session.pendingBytes >= WAITING_PAUSE_BYTES) this.pause('waiting');
        return;
      case 'withdrawRequest':
        this.waitingForBackend = false;
        this.pool?.withdraw(this);
        return;
      case 'releaseBackend': {
        const b = this.backend;
        if (b === null || this.pool === null) return;
        this.backend = null;
        this.resumeBackend();
        this.resume('backendFull');
        this.addTraffic(this.pool);
        this.pool.release(b, a.facts);
        return;
      }
      case 'timer':
        if (a.timer === 'query') this.timeQuery(a.armed);
        return this.setTimer(a.timer, a.armed);
      case 'close':
        return this.close();
      default: {
        const never: never = a;
        throw new Error(`unhandled session action ${JSON.stringify(never)}`);
      }
    }
  }

  /**
   * Reports the end of a login to the operator hooks (logs): logged in once the session first
   * leaves startup/authentication/connecting, failed when an admitted session closes before that.
   * Sessions refused at admission (reported as such) and ones that never sent a StartupMessage
   * (CancelRequest, probes) are neither.
   */
  private loginProgress(before: ClientSession['phase'], actions: readonly SessionAction[]): void {
    const s = this.session;
    switch (s.phase) {
      case 'startup':
      case 'authenticating':
      case 'connecting':
        return;
      case 'closed': {
        this.loginDone = true;
        if (this.admittedPool === null) return;
        const stage = before === 'connecting' ? 'server login' : 'authentication';
        let error: { sqlstate: string; message: string } | undefined;
        for (const a of actions) if (a.type === 'sendToClient') error = fatalOf(a.bytes) ?? error;
        let reason = error?.message ?? (stage === 'authentication' ? 'the client closed the connection during authentication' : 'the client closed the connection during server login');
        // The client only learns "password authentication failed"; the operator also learns why.
        if (stage === 'authentication' && this.core.config.users.get(s.user) === undefined) reason += ' (no such user in the config)';
        this.core.control.clientLoginFailed(this, { database: s.database, user: s.user, stage, sqlstate: error?.sqlstate ?? null, reason });
        return;
      }
      case 'idle':
      case 'waiting':
      case 'attached':
        this.loginDone = true;
        this.core.control.clientLoggedIn(this, s.database, s.user);
        return;
      default: {
        const never: never = s.phase;
        throw new Error(`unhandled phase ${String(never)}`);
      }
    }
  }

  private onAuthenticated(database: string, user: string): void {
    const early = unconfirmedEarlyData(this.stream);
    if (early !== null) {
      // 0-RTT replay policy: startup and authentication may run on early data (no side effects);
      // nothing reaches a backend before the QUIC handshake is confirmed, which a replayed
      // connection never achieves. The client's queries wait queued until then (~1 RTT at most).
      early.handshakeConfirmed().then(
        () => {
          if (!this.closed) this.onAuthenticated(database, user);
        },
        () => this.dispatch({ type: 'clientClosed' }),
      );
      return;
    }
    const pool = this.core.poolFor(database, user);
    this.pool = pool;
    pool.parameters().then(
      (parameters) => {
        if (this.closed) return;
        const cancelKey = this.core.cancelKeys.register(this, this.session.protocolMinor);
        this.cancelProcessId = cancelKey.processId;
        this.dispatch({ type: 'serverParameters', parameters, cancelKey });
      },
      (e: unknown) => {
        const error = e instanceof BackendLoginError ? e.toErrorResponse() : new BackendLoginError(String(e), undefined).toErrorResponse();
        this.dispatch({ type: 'backendUnavailable', error });
      },
    );
  }

  // Waiter
  onBackend(b: Backend): void {
    if (this.closed) {
      // Lost the race with our own close: give it straight back, untouched.
      this.pool?.release(b, { status: 'I', busy: false, dirty: false });
      return;
    }
    b.owner = this;
    this.backend = b;
    this.waitingForBackend = false;
    if (this.pauses.has('waiting')) this.resume('waiting');
    this.dispatch({ type: 'backendAttached', backend: b });
  }

  onError(error: Buffer): void {
    this.waitingForBackend = false;
    this.dispatch({ type: 'backendUnavailable', error });
  }

  // BackendOwner
  onBackendMessage(message: RawMessage): void {
    this.dispatch({ type: 'backendMessage', message });
  }

  onBackendLost(reason: string): void {
    this.backend = null;
    this.backendPaused = null;
    this.dispatch({ type: 'backendLost', reason });
  }

  private resumeBackend(): void {
    const b = this.backendPaused;
    this.backendPaused = null;
    if (b !== null && b.state !== 'closed') b.socket.resume();
  }

  private pause(reason: PauseReason): void {
    this.pauses.add(reason);
    this.stream.pause();
  }

  private resume(reason: PauseReason): void {
    if (!this.pauses.delete(reason)) return;
    if (this.pauses.size === 0 && !this.closed) this.stream.resume();
  }

  /** The 'query' timer runs exactly while requests are out: it times the pool's query totals. */
  private timeQuery(armed: boolean): void {
    if (armed) {
      if (this.queryStartedAt < 0) this.queryStartedAt = performance.now();
    } else if (this.queryStartedAt >= 0) {
      this.queryMicros += (performance.now() - this.queryStartedAt) * 1000;
      this.queryStartedAt = -1;
    }
  }

  /** Adds the traffic since the last call to the pool's totals (numbers only: nothing allocated). */
  private addTraffic(pool: Pool): void {
    const queries = this.session.queriesAnswered;
    pool.addTraffic(queries - this.queriesCounted, this.queryMicros, this.receivedBytes, this.sentBytes);
    this.queriesCounted = queries;
    this.queryMicros = 0;
    this.receivedBytes = 0;
    this.sentBytes = 0;
  }

  private setTimer(timer: SessionTimer, armed: boolean): void {
    // Most timers are off (0 ms) and were never armed: nothing to clear, nothing to arm.
    if (this.timers.size === 0 && !armed) return;
    const old = this.timers.get(timer);
    if (old !== undefined) {
      clearTimeout(old);
      this.timers.delete(timer);
    }
    const ms = this.timeoutOf(timer);
    if (!armed || ms <= 0 || this.closed) return;
    const t = setTimeout(() => this.dispatch({ type: 'timeout', timer }), ms);
    t.unref();
    this.timers.set(timer, t);
  }

  private timeoutOf(timer: SessionTimer): number {
    const settings = this.core.config.pool;
    switch (timer) {
      case 'authentication':
        return this.core.config.authTimeoutMs;
      case 'authFailure':
        return this.core.config.authFailureDelayMs;
      case 'clientIdle':
        return settings.clientIdleTimeoutMs;
      case 'idleInTransaction':
        return settings.idleTransactionTimeoutMs;
      case 'query':
        return settings.queryTimeoutMs;
      default: {
        const never: never = timer;
        throw new Error(`unknown timer ${String(never)}`);
      }
    }
  }

  private startTls(): void {
    const tls = this.core.config.tls;
    if (tls === undefined) return;
    this.pause('tls');
    this.writer.flush();
    const raw = this.stream;
    this.unbind(raw);
    raw.on('error', () => undefined);
    upgradeToTls(raw, tls).then(
      (secure) => {
        this.stream = secure;
        this.core.control.clientUpgraded(this, secure.info);
        this.writer = new BatchedWriter(secure);
        this.bind(secure);
        this.resume('tls');
      },
      () => this.dispatch({ type: 'clientClosed' }),
    );
  }

  private close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    if (this.cancelProcessId !== 0) this.core.cancelKeys.unregister(this.cancelProcessId);
    this.timeQuery(false);
    if (this.pool !== null) this.addTraffic(this.pool);
    this.resumeBackend();
    this.writer.flush();
    const stream = this.stream;
    this.unbind(stream);
    stream.on('error', () => undefined);
    if (!stream.destroyed) {
      stream.end();
      // A peer that never reads must not hold the socket open forever.
      const t = setTimeout(() => stream.destroy(), 5000);
      t.unref();
      stream.once('close', () => clearTimeout(t));
      stream.resume(); // drain (and discard) whatever the client still sends, so 'close' comes
    }
    this.core.sessionClosed(this);
  }
}

/** SQLSTATE and message of an ErrorResponse the session sends (it sends each one as its own buffer). */
function fatalOf(bytes: Buffer): { sqlstate: string; message: string } | undefined {
  if (bytes[0] !== 0x45) return undefined;
  try {
    const m = decodeBackendMessage(bytes);
    return m.type === 'ErrorResponse' ? { sqlstate: m.fields['C'] ?? '', message: m.fields['M'] ?? '' } : undefined;
  } catch {
    return undefined;
  }
}

/** A QUIC stream that began in 0-RTT early data whose handshake is not confirmed yet, else null. */
function unconfirmedEarlyData(stream: SessionStream): QuicSessionStream | null {
  return stream instanceof QuicSessionStream && stream.info.quic?.earlyData === true && !stream.isHandshakeConfirmed ? stream : null;
}
