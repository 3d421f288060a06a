// The thin driver of one client session: decodes the client's bytes into events for its state
// machine and carries out its actions on the stream, the pool, the backend and the clock (the
// plain lane beside it: client-connection.ts). It keeps I/O handles only (the stream and its
// writer, the attached backend, the pool, its timers (session-timers.ts), read pauses) plus the
// traffic counted for the pool (traffic.ts); every decision and fact comes from the machine.
import { decodeStartupPacket, encodeFrontend, FrontendDecoder, MessageType, ProtocolError, SQLSTATE } from '@quicpool/wire';
import type { RawMessage } from '@quicpool/wire';
import { upgradeToTls } from '@quicpool/transport';
import type { SessionInfo, SessionStream } from '@quicpool/transport';
import type { ScramKeys } from '../auth/scram.js';
import type { Backend } from '../backend/backend.js';
import type { Waiter } from '../backend/link.js';
import { BackendLoginError, fatal } from '../backend/login.js';
import { clientReads } from './client-reads.js';
import { clientRow } from './client-row.js';
import { EventQueue } from './event-queue.js';
import { whenConfirmed } from './replay-window.js';
import { HOLD_MESSAGES, PAUSED_BACKEND_FULL, PAUSED_LOOKUP, PAUSED_TLS, PAUSED_WAITING, WAITING_PAUSE_BYTES } from './read-pauses.js';
import { SessionTimers } from './session-timers.js';
import { Traffic } from './traffic.js';
import type { ClientHandle, PoolerCore } from '../core/pooler-core.js';
import type { ClientRow } from '../core/view.js';
import type { BatchedWriter } from '../runtime/write-batcher.js';
import type { Pool } from '../pool/pool.js';
import { ClientSession } from '../session/client-session.js';
import { CLEAN_RELEASE } from '../session/transaction.js';
import type { CancelKey, EncodedError, ReleaseFacts, SessionAction, SessionEvent, SessionTimer } from '../session/types.js';

/** A client that does not read after we ended its stream is cut off after this long. */
const CLOSE_LINGER_MS = 5_000;
/** What the end of a client's stream means once it is logged in (see `onEnd`). */
const TERMINATE: RawMessage = { type: MessageType.Terminate, bytes: encodeFrontend({ type: 'Terminate' }) };

export abstract class SessionDriver implements Waiter, ClientHandle {
  readonly session: ClientSession;
  private stream: SessionStream;
  /** The stream's writeBatching is 'per-read' (read once per stream: sockets differ in shape, so the load per read would be megamorphic). */
  private perRead: boolean;
  private writer: BatchedWriter;
  protected readonly decoder: FrontendDecoder;
  protected backend: Backend | null = null;
  protected pool: Pool | null = null;
  /** The backend's key while a request runs on it (what a CancelRequest interrupts), else null. */
  private cancelProcessId = 0;
  protected readonly events: EventQueue;
  protected ended = false;
  protected paused = 0;
  private backendPaused: Backend | null = null;
  private readonly timers: SessionTimers;
  /** The pool key this session was admitted to, released once when it ends. */
  private admittedKey: string | null = null;
  private readonly connectedAt = Date.now();
  private readonly startedAt: number;
  /** Traffic not yet added to the pool's totals (added per transaction, and at the end). */
  protected readonly traffic = new Traffic();

  constructor(
    stream: SessionStream,
    protected readonly core: PoolerCore,
  ) {
    this.stream = stream;
    this.perRead = stream.writeBatching === 'per-read';
    this.writer = core.batcher.writer(stream);
    this.decoder = new FrontendDecoder({ maxMessageSize: core.config.maxMessageSize });
    this.session = new ClientSession(core.sessionContext(this, (key) => (this.admittedKey = key)));
    this.events = new EventQueue((e) => this.session.handle(e), (a) => this.perform(a));
    this.startedAt = core.clock.now();
    this.timers = new SessionTimers(core.clock, () => core.config, (timer) => this.dispatch({ type: 'timeout', timer }));
    this.bind(stream);
    // Startup and authentication are bounded in time (Postgres's authentication_timeout).
    this.timers.set('authentication', true);
    // Read-only 0-RTT policy: the session runs at once; it learns when nothing can be a replay.
    if (this.session.guardsEarlyData) whenConfirmed(stream, () => this.confirmed(), this.onGone);
  }

  get info(): SessionInfo {
    return this.stream.info;
  }

  /** Read-only 0-RTT policy: the handshake is confirmed; input paused while it waited flows again. */
  private confirmed(): void {
    this.dispatch({ type: 'handshakeConfirmed' });
    if (this.session.phase !== 'waiting') this.resume(PAUSED_WAITING);
  }

  // --- ClientHandle ----------------------------------------------------------------------------

  row(): Omit<ClientRow, 'worker'> {
    return clientRow(this.session, this.stream.info, this.connectedAt);
  }

  shutdown(graceful: boolean): void {
    this.dispatch({ type: 'shutdown', graceful });
  }

  runningRequest(): CancelKey | null {
    return this.session.busy ? this.backend : null;
  }

  // --- the client stream -----------------------------------------------------------------------

  private bind(stream: SessionStream): void {
    // Sockets' and QUIC streams' reads skip the Readable layer (a fresh buffer per read, see clientReads).
    if (stream.readInto?.(clientReads(this.onData)) !== true) stream.on('data', this.onData);
    stream.on('end', this.onEnd);
    stream.on('error', this.onGone);
    stream.on('close', this.onGone);
  }

  private unbind(stream: SessionStream): void {
    stream.off('data', this.onData);
    stream.off('end', this.onEnd);
    stream.off('error', this.onGone);
    stream.off('close', this.onGone);
  }

  private readonly onGone = (): void => this.dispatch({ type: 'clientClosed' });

  /**
   * The client ended its side (it may still read). Postgres reads that end as it reads a
   * Terminate: after answering everything the client sent before it. So does a session whose
   * backend is attached; otherwise the end is the end.
   */
  private readonly onEnd = (): void => {
    if (this.session.phase === 'attached') this.dispatch({ type: 'clientMessage', message: TERMINATE });
    else this.onGone();
  };

  /** `chunk`'s first `length` bytes were received (all of it for a 'data' event). */
  private readonly onData = (chunk: Buffer, length: number = chunk.length): void => {
    // What a socket's chunk caused leaves when it is handled (one write per stream, as at the end
    // of the turn); an in-memory stream's waits for the end of the turn.
    if (!this.perRead) return this.onInput(chunk, length);
    const batcher = this.core.batcher;
    batcher.beginCycle();
    try {
      this.onInput(chunk, length);
    } finally {
      batcher.endCycle();
    }
  };

  private onInput(chunk: Buffer, length: number): void {
    this.traffic.receivedBytes += length;
    if (this.plainQuery(chunk, length)) return;
    try {
      this.decoder.push(chunk, length);
      this.drain();
      if ((this.session.phase === 'waiting' || this.session.awaitingConfirmation) && this.session.pendingBytes >= WAITING_PAUSE_BYTES) this.pause(PAUSED_WAITING);
    } catch (e) {
      this.dispatch({ type: 'protocolError', message: e instanceof ProtocolError ? e.message : String(e) });
    }
  }

  /** The client messages the decoder holds, until something holds them back. */
  private drain(): void {
    for (let m = this.decoder.nextRaw(); m !== undefined && !this.ended && (this.paused & HOLD_MESSAGES) === 0; m = this.decoder.nextRaw()) this.onClientMessage(m);
  }

  private onClientMessage(m: RawMessage): void {
    if (m.type !== 0) return this.dispatch({ type: 'clientMessage', message: m });
    const packet = decodeStartupPacket(m.bytes);
    const user = packet.type === 'StartupMessage' ? packet.parameters['user'] : undefined;
    if (user === undefined || !this.core.needsLookup(user)) return this.dispatch({ type: 'startupPacket', packet });
    // auth_query: the user's secret comes from the server first (cached); the startup waits.
    this.pause(PAUSED_LOOKUP);
    void this.core.lookupUser(user).then(() => {
      if (this.ended) return;
      this.dispatch({ type: 'startupPacket', packet });
      this.resume(PAUSED_LOOKUP);
      try {
        this.drain();
      } catch (e) {
        this.dispatch({ type: 'protocolError', message: e instanceof ProtocolError ? e.message : String(e) });
      }
      this.core.batcher.flushAll();
    });
  }

  /** The plain lane (client-connection.ts): the read, or the backend, was taken at once (true), or nothing was done. */
  protected abstract plainQuery(chunk: Buffer, length: number): boolean;
  protected abstract plainAttach(b: Backend): boolean;

  // --- the machine -----------------------------------------------------------------------------

  /** Events are handled one at a time, in order, even when an action causes another event. */
  dispatch(e: SessionEvent): void {
    this.events.dispatch(e);
  }

  private perform(a: SessionAction): void {
    switch (a.type) {
      case 'sendToClient':
        return this.toClient(a.bytes);
      case 'sendToBackend':
        if (this.backend !== null) this.toBackend(this.backend, a.bytes);
        return;
      case 'endBackend':
        this.backend?.finish();
        return;
      case 'startTls':
        return this.startTls();
      case 'cancel': {
        // 0-RTT replay policy: a replayed CancelRequest never sees its handshake confirmed.
        return whenConfirmed(this.stream, () => this.core.cancel(a.processId, a.secretKey));
      }
      case 'authenticated':
        return this.onAuthenticated(a.database, a.user, a.scramKeys);
      case 'loggedIn':
      case 'loginFailed':
      case 'protocolViolation':
        return this.core.emit({ ...a, info: this.stream.info, database: this.session.database, user: this.session.user });
      case 'requestBackend':
        if (this.pool !== null) this.requestBackend(this.pool);
        return;
      case 'withdrawRequest':
        this.pool?.withdraw(this);
        return;
      case 'releaseBackend':
        return this.releaseBackend(a.facts);
      case 'timer':
        return this.setTimer(a.timer, a.armed);
      case 'close':
        return this.end();
      default: {
        const never: never = a;
        throw new Error(`unhandled session action ${JSON.stringify(never)}`);
      }
    }
  }

  /**
   * 0-RTT replay policy: startup and authentication may run on early data (no side effects);
   * nothing reaches a backend before the QUIC handshake is confirmed, which a replayed connection
   * never achieves. The client's queries wait queued until then (~1 RTT at most). Under the
   * read-only policy the session itself keeps writes away from the backend until then (see
   * EarlyDataGate): its pool is found at once.
   */
  private onAuthenticated(database: string, user: string, scramKeys: ScramKeys | undefined): void {
    if (this.session.guardsEarlyData) return this.usePool(database, user, scramKeys);
    whenConfirmed(this.stream, () => this.ended || this.usePool(database, user, scramKeys), this.onGone);
  }

  private usePool(database: string, user: string, scramKeys: ScramKeys | undefined): void {
    const pool = this.core.poolFor(database, user);
    this.pool = pool;
    if (scramKeys !== undefined) this.core.rememberScramKeys(database, user, scramKeys);
    pool.parameters().then(
      (parameters) => {
        if (this.ended) return;
        const cancelKey = this.core.registerCancelKey(this, this.session.protocolMinor);
        this.cancelProcessId = cancelKey.processId;
        this.dispatch({ type: 'serverParameters', parameters, cancelKey, prepared: pool.prepared });
      },
      (e: unknown) => this.dispatch({ type: 'backendUnavailable', error: e instanceof BackendLoginError ? e.toEncodedError() : fatal(SQLSTATE.SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION, String(e)) }),
    );
  }

  // --- Waiter (the pool's client) --------------------------------------------------------------

  onBackend(b: Backend): void {
    // Lost the race with our own end: give it straight back, untouched.
    if (this.ended) return this.pool?.release(b, CLEAN_RELEASE);
    this.backend = b;
    this.resume(PAUSED_WAITING);
    if (!this.plainAttach(b)) this.dispatch({ type: 'backendAttached', backend: b });
  }

  onError(error: EncodedError): void {
    this.dispatch({ type: 'backendUnavailable', error });
  }

  onBackendMessage(message: RawMessage): void {
    this.dispatch({ type: 'backendMessage', message });
  }

  passesThrough(type: number, buffer: Buffer, start: number): boolean {
    // While an event is handled, backend messages queue behind it as events (their order counts).
    return !this.events.busy && this.session.passesThrough(type, buffer, start);
  }

  forward(messages: Buffer): void {
    this.toClient(messages);
  }

  protected requestBackend(pool: Pool): void {
    pool.acquire(this);
    // Only a real wait with much queued pauses the client (WAITING_PAUSE_BYTES; onData checks again):
    // a backend handed over at once is here already, its attach maybe queued (phase still 'waiting').
    if (this.backend === null && this.session.phase === 'waiting' && this.session.pendingBytes >= WAITING_PAUSE_BYTES) this.pause(PAUSED_WAITING);
  }

  protected releaseBackend(facts: ReleaseFacts): void {
    const b = this.backend;
    if (b === null || this.pool === null) return;
    this.backend = null;
    this.resumeBackend();
    this.resume(PAUSED_BACKEND_FULL);
    this.traffic.report(this.pool, this.session.queriesAnswered);
    this.pool.release(b, facts);
  }

  protected setTimer(timer: SessionTimer, armed: boolean): void {
    // The 'query' timer runs exactly while requests are out: it times the pool's query totals.
    if (timer === 'query') this.traffic.requestsOut(armed, this.core.clock.now());
    this.timers.set(timer, armed);
  }

  /** `now`: written at once rather than at the end of the read (the plain lane: nothing else goes there in it). */
  protected toBackend(b: Backend, bytes: Buffer, now = false): void {
    if (!(now ? b.writeNow(bytes) : b.write(bytes)) && (this.paused & PAUSED_BACKEND_FULL) === 0) {
      this.pause(PAUSED_BACKEND_FULL);
      b.onceWritable(() => this.resume(PAUSED_BACKEND_FULL));
    }
  }

  protected toClient(bytes: Buffer, now = false): void {
    this.traffic.sentBytes += bytes.length;
    if (!(now ? this.writer.writeNow(bytes) : this.writer.write(bytes)) && this.backend !== null && this.backendPaused === null) {
      // Backpressure: stop reading the server until the client catches up.
      const b = this.backend;
      this.backendPaused = b;
      b.pause();
      this.stream.once('drain', () => this.resumeBackend());
    }
  }

  onBackendLost(reason: string): void {
    this.backend = null;
    this.backendPaused = null;
    this.dispatch({ type: 'backendLost', reason });
  }

  // --- reading pauses, traffic, timers ---------------------------------------------------------

  private resumeBackend(): void {
    const b = this.backendPaused;
    this.backendPaused = null;
    b?.resume();
  }

  private pause(reason: number): void {
    if ((this.paused & reason) !== 0) return;
    this.paused |= reason;
    this.stream.pause();
  }

  private resume(reason: number): void {
    if ((this.paused & reason) === 0) return;
    this.paused &= ~reason;
    if (this.paused === 0 && !this.ended) this.stream.resume();
  }

  // --- TLS and the end -------------------------------------------------------------------------

  private startTls(): void {
    const tls = this.core.config.tls;
    if (tls === undefined) return;
    this.pause(PAUSED_TLS);
    this.writer.flush();
    const raw = this.stream;
    this.unbind(raw);
    raw.on('error', () => undefined);
    upgradeToTls(raw, tls).then(
      (secure) => {
        this.stream = secure;
        this.perRead = secure.writeBatching === 'per-read';
        this.writer = this.core.batcher.writer(secure);
        this.bind(secure);
        this.resume(PAUSED_TLS);
      },
      () => this.dispatch({ type: 'clientClosed' }),
    );
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    const clock = this.core.clock;
    this.timers.stop();
    if (this.cancelProcessId !== 0) this.core.unregisterCancelKey(this.cancelProcessId);
    this.traffic.requestsOut(false, clock.now());
    if (this.pool !== null) this.traffic.report(this.pool, this.session.queriesAnswered);
    this.resumeBackend();
    const stream = this.stream;
    this.unbind(stream);
    stream.on('error', () => undefined);
    if (!stream.destroyed) {
      this.writer.end();
      // A peer that never reads must not hold the stream open forever.
      const t = clock.setTimer(() => stream.destroy(), CLOSE_LINGER_MS);
      stream.once('close', () => clock.clearTimer(t));
      stream.resume(); // drain (and discard) whatever the client still sends, so 'close' comes
    }
    const info = this.stream.info;
    this.core.emit({ type: 'closed', info, database: this.session.database, user: this.session.user, durationMs: clock.now() - this.startedAt });
    this.core.closed(this, this.admittedKey);
    this.admittedKey = null;
  }
}
