// The thin driver of one client session: decodes the client's bytes into events for the
// ClientSession state machine and carries out its actions on the stream, the pool and the clock.
import { decodeStartupPacket, FrontendDecoder, ProtocolError } from '@quicpool/wire';
import type { RawMessage } from '@quicpool/wire';
import { upgradeToTls } from '@quicpool/transport';
import type { SessionStream } from '@quicpool/transport';
import type { Backend, BackendOwner } from '../backend/backend.js';
import { BackendLoginError } from '../backend/connect.js';
import type { Pool, Waiter } from '../pool/pool.js';
import { ClientSession } from '../session/client-session.js';
import type { SessionAction, SessionEvent, SessionTimer } from '../session/types.js';
import { BatchedWriter } from './batched-writer.js';
import type { PoolerCore } from './pooler-core.js';

type PauseReason = 'waiting' | 'backendFull' | 'tls';

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
  private closed = false;
  private readonly pauses = new Set<PauseReason>();
  private backendPaused: Backend | null = null;
  private readonly timers = new Map<SessionTimer, NodeJS.Timeout>();
  /** The (database, user) admission this session holds, released once on close. */
  admittedPool: string | null = null;

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
    try {
      this.decoder.push(chunk);
      for (let m = this.decoder.nextRaw(); m !== undefined && !this.closed && !this.pauses.has('tls'); m = this.decoder.nextRaw()) {
        this.onClientMessage(m);
      }
    } catch (e) {
      this.dispatch({ type: 'protocolError', message: e instanceof ProtocolError ? e.message : String(e) });
    }
  };

  private onClientMessage(m: RawMessage): void {
    if (m.type === 0) this.dispatch({ type: 'startupPacket', packet: decodeStartupPacket(m.bytes) });
    else this.dispatch({ type: 'clientMessage', message: m });
  }

  /** Events are handled one at a time, in order, even when an action causes another event. */
  dispatch(e: SessionEvent): void {
    this.queue.push(e);
    if (this.running) return;
    this.running = true;
    try {
      for (let ev = this.queue.shift(); ev !== undefined; ev = this.queue.shift()) {
        for (const a of this.session.handle(ev)) this.perform(a);
      }
    } finally {
      this.running = false;
    }
  }

  private perform(a: SessionAction): void {
    switch (a.type) {
      case 'sendToClient':
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
      case 'cancel':
        this.core.cancel(a.processId, a.secretKey);
        return;
      case 'authenticated':
        return this.onAuthenticated(a.database, a.user);
      case 'requestBackend':
        if (this.pool === null) return;
        this.waitingForBackend = true;
        this.pool.acquire(this);
        // Only a real wait pauses the client (pause/resume cost a syscall each on a socket).
        if (this.waitingForBackend) this.pause('waiting');
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
        this.pool.release(b, a.facts);
        return;
      }
      case 'timer':
        return this.setTimer(a.timer, a.armed);
      case 'close':
        return this.close();
      default: {
        const never: never = a;
        throw new Error(`unhandled session action ${JSON.stringify(never)}`);
      }
    }
  }

  private onAuthenticated(database: string, user: string): void {
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
    this.pauses.delete(reason);
    if (this.pauses.size === 0 && !this.closed) this.stream.resume();
  }

  private setTimer(timer: SessionTimer, armed: boolean): void {
    const old = this.timers.get(timer);
    if (old !== undefined) clearTimeout(old);
    this.timers.delete(timer);
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
