// One local client connection of the agent: answer its SSLRequest/GSSENCRequest with 'N', then
// either carry its CancelRequest on a fresh QUIC stream or get a stream for its session, send the
// StartupMessage at once (in 0-RTT early data on a resumed connection) and forward raw bytes both
// ways with backpressure both ways. With fast start (a login the agent vouches for, seen before)
// the agent answers the startup itself at once and the pooler's own answer is absorbed (see
// login-answer.ts), so the client's first query leaves in the same flight as the StartupMessage.
// Errors reach the local client as an ErrorResponse with a real SQLSTATE whenever a message
// boundary allows one; a client that goes away without Terminate gets its stream reset, so the
// pooler releases its backend.
import type { Socket } from 'node:net';
import { errorResponse, SQLSTATE } from '@quicpool/wire';
import type { QuicSessionStream } from '@quicpool/transport';
import type { CancelKeys } from './cancel-keys.js';
import { readFirstPacket } from './first-packet.js';
import { LocalScram } from './local-auth.js';
import type { LocalCheck, LocalPasswords } from './local-auth.js';
import { LoginAnswer, localLoginAnswer } from './login-answer.js';
import type { BackendKey, LoginRecord } from './login-answer.js';
import { LoginCache, sameRecord } from './login-cache.js';
import { MessageBoundary } from './message-boundary.js';
import type { AgentCounters, AgentEvent, RefusalCode, SessionEnd } from './stats.js';

/** What a local session needs from its agent. */
export interface SessionHost {
  readonly counters: AgentCounters;
  readonly startupTimeoutMs: number;
  /** Reserves a place (carried or waiting) or says why not (53300 / 57P01). */
  admit(): { ok: true } | { ok: false; sqlstate: RefusalCode; reason: string };
  /** A QUIC stream for a session (rejects with the reason it cannot have one). */
  acquireSession(signal: AbortSignal): Promise<QuicSessionStream>;
  /** A QUIC stream for a CancelRequest (never queued behind the session limit). */
  acquireCancel(): Promise<QuicSessionStream>;
  /** The session got its stream (waiting -> active). */
  carried(s: LocalSession): void;
  /** The session is over; gives back its place. */
  done(s: LocalSession, admitted: boolean): void;
  emit(e: AgentEvent): void;
  /** Which local check sessions of this listener get. */
  localCheck(unix: boolean): LocalCheck;
  /** Whether sessions of this listener may fast-start (see options.ts, fastStart). */
  fastStart(unix: boolean): boolean;
  /** What the pooler answered earlier logins (fast start announces it). */
  readonly logins: LoginCache;
  /** The keys of fast-started sessions and the pooler's behind them. */
  readonly keys: CancelKeys;
  /** The local password list ('password' checks). */
  readonly passwords: LocalPasswords | null;
  /** The OS user name of a unix socket's peer process (null: unknown). */
  peerName(socket: Socket): Promise<string | null>;
  /** Maps an acquire failure to what the local client is told. */
  acquireFailure(err: Error): { sqlstate: RefusalCode; message: string };
}

/** At most this many SSLRequest/GSSENCRequest packets before a StartupMessage (libpq sends up to 2). */
const MAX_ENCRYPTION_REQUESTS = 2;
const NO = Buffer.from('N');

type Phase =
  | { kind: 'startup'; buf: Buffer; requests: number }
  /** Peer check under way. */
  | { kind: 'checking' }
  /**
   * Waiting for a stream, and/or for the local password check. With a check, the StartupMessage
   * leaves as soon as the stream is there (`stream`) and the pooler's answer waits for the check.
   */
  | { kind: 'waiting'; abort: AbortController; stream: QuicSessionStream | null; scram: LocalScram | null; rest: Buffer; remembered: LoginRecord | null }
  | { kind: 'forwarding'; stream: QuicSessionStream }
  /**
   * A fast start the pooler refused before the client sent anything: its error waits for the
   * client's first message and is the answer to it, as it would have been with a slower pooler.
   */
  | { kind: 'refusing'; error: Buffer }
  | { kind: 'closed' };

export class LocalSession {
  private phase: Phase = { kind: 'startup', buf: Buffer.alloc(0), requests: 0 };
  private admitted = false;
  private user: string | null = null;
  private database = '';
  private readonly started = performance.now();
  private readonly up = new MessageBoundary();
  private readonly down = new MessageBoundary();
  private readonly startupTimer: NodeJS.Timeout | null;
  private authTimer: NodeJS.Timeout | null = null;
  private early = false;
  /** The pooler has sent this session something. */
  private answered = false;
  /** The client has sent something since the agent's answer to its startup. */
  private spoke = false;
  /** The StartupMessage's key in the login cache (null: not remembered). */
  private loginKey: string | null = null;
  /** A fast start: what the agent told the client (values, its own key), until the session ends. */
  private fast: { readonly announced: ReadonlyMap<string, string>; readonly key: BackendKey } | null = null;

  constructor(
    private readonly socket: Socket,
    private readonly host: SessionHost,
    readonly peer: string,
    /** Came in on the unix socket (peer checks apply). */
    private readonly unix: boolean,
  ) {
    socket.on('data', this.onStartupData);
    socket.on('error', () => this.onLocalGone(false));
    socket.on('end', () => this.onLocalEnd());
    socket.on('close', () => this.onLocalGone(false));
    const ms = host.startupTimeoutMs;
    this.startupTimer = ms > 0 ? setTimeout(() => this.refuse(SQLSTATE.PROTOCOL_VIOLATION as RefusalCode, `no StartupMessage within ${ms} ms`), ms) : null;
    this.startupTimer?.unref();
  }

  get isForwarding(): boolean {
    return this.phase.kind === 'forwarding';
  }

  /** Shutdown deadline: tell the client (when a message boundary allows it) and cut the session. */
  terminate(message: string): void {
    const p = this.phase;
    if (p.kind === 'closed') return;
    if (p.kind === 'forwarding' && this.down.atBoundary) {
      this.socket.end(errorResponse('FATAL', SQLSTATE.ADMIN_SHUTDOWN, message));
    } else if (p.kind !== 'forwarding') {
      this.socket.end(errorResponse('FATAL', SQLSTATE.ADMIN_SHUTDOWN, message));
    } else {
      this.socket.destroy();
    }
    this.finish('drained');
  }

  // --- startup phase ---------------------------------------------------------------------------

  private readonly onStartupData = (chunk: Buffer): void => {
    const p = this.phase;
    if (p.kind !== 'startup') return;
    p.buf = p.buf.length === 0 ? chunk : Buffer.concat([p.buf, chunk]);
    for (;;) {
      const r = readFirstPacket(p.buf);
      switch (r.kind) {
        case 'incomplete':
          return;
        case 'invalid':
          return this.refuse(SQLSTATE.PROTOCOL_VIOLATION as RefusalCode, r.reason);
        case 'terminate':
          this.stopStartup();
          this.socket.end();
          return this.finish('clean');
        case 'encryptionRequest':
          if (++p.requests > MAX_ENCRYPTION_REQUESTS) return this.refuse(SQLSTATE.PROTOCOL_VIOLATION as RefusalCode, `more than ${MAX_ENCRYPTION_REQUESTS} encryption requests`);
          this.host.counters.encryptionDeclined++;
          this.socket.write(NO);
          p.buf = p.buf.subarray(r.length);
          if (p.buf.length === 0) return;
          continue;
        case 'cancel':
          return this.cancel(r.request, r.bytes);
        case 'startup':
          return this.startSession(r.message.parameters, r.bytes, p.buf.subarray(r.length));
        default: {
          const never: never = r;
          throw new Error(`unknown first packet ${JSON.stringify(never)}`);
        }
      }
    }
  };

  private stopStartup(): void {
    if (this.startupTimer !== null) clearTimeout(this.startupTimer);
    this.socket.off('data', this.onStartupData);
    this.socket.pause();
  }

  private cancel(request: BackendKey, bytes: Buffer): void {
    this.stopStartup();
    this.phase = { kind: 'closed' };
    this.host.counters.cancels++;
    this.host.emit({ type: 'cancel', peer: this.peer });
    this.host.done(this, false);
    const packet = this.host.keys.translate(request, Buffer.from(bytes));
    if (Buffer.isBuffer(packet)) return this.sendCancel(packet);
    // A fast-started session whose real key is not known yet: sent as soon as it is.
    this.host.counters.cancelsHeld++;
    void packet.then((p) => (p === null ? void this.socket.end() : this.sendCancel(p)));
  }

  private sendCancel(packet: Buffer): void {
    // Postgres answers a CancelRequest by closing the connection; so do we, once it is on its way.
    this.host.acquireCancel().then(
      (s) => {
        s.on('error', () => undefined);
        s.resume();
        s.end(packet, () => this.socket.end());
        setTimeout(() => s.destroy(), 10_000).unref();
      },
      () => this.socket.end(),
    );
  }

  private startSession(parameters: Readonly<Record<string, string>>, startup: Buffer, rest: Buffer): void {
    this.stopStartup();
    const user = parameters['user'] ?? '';
    this.user = user;
    this.database = parameters['database'] ?? user;
    const admission = this.host.admit();
    if (!admission.ok) return this.refuse(admission.sqlstate, admission.reason);
    this.admitted = true;
    // Copies: both may share the socket's buffer.
    const startupBytes = Buffer.from(startup);
    const restBytes = Buffer.from(rest);
    const check = this.host.localCheck(this.unix);
    this.loginKey = LoginCache.key(startupBytes);
    const remembered = this.loginKey !== null && this.host.fastStart(this.unix) ? this.host.logins.get(this.loginKey) ?? null : null;
    switch (check) {
      case 'pooler':
        if (remembered !== null) this.answerLocally(remembered);
        return this.acquire(startupBytes, restBytes, null, remembered);
      case 'peer':
        this.phase = { kind: 'checking' };
        void this.host.peerName(this.socket).then((name) => {
          if (this.phase.kind !== 'checking') return;
          if (name !== user) {
            const who = name === null ? 'the peer process could not be identified' : `the peer runs as OS user "${name}"`;
            return this.refuse(SQLSTATE.INVALID_AUTHORIZATION_SPECIFICATION as RefusalCode, `peer authentication failed for user "${user}" (${who})`);
          }
          if (remembered !== null) this.answerLocally(remembered);
          this.acquire(startupBytes, restBytes, null, remembered);
        });
        return;
      case 'password': {
        const passwords = this.host.passwords;
        if (passwords === null) return this.refuse(SQLSTATE.INVALID_AUTHORIZATION_SPECIFICATION as RefusalCode, 'no local password list configured');
        this.acquire(startupBytes, Buffer.alloc(0), passwords.exchange(user), remembered);
        const ms = this.host.startupTimeoutMs;
        if (ms > 0) {
          this.authTimer = setTimeout(() => this.refuse(SQLSTATE.PROTOCOL_VIOLATION as RefusalCode, `local authentication not completed within ${ms} ms`), ms);
          this.authTimer.unref();
        }
        this.socket.on('data', this.onAuthData);
        this.socket.write(LocalScram.begin());
        this.socket.resume();
        if (restBytes.length > 0) this.onAuthData(restBytes);
        return;
      }
      default: {
        const never: never = check;
        throw new Error(`unknown local check ${String(never)}`);
      }
    }
  }

  /**
   * Gets a stream; sends the StartupMessage as soon as it is there. `remembered`: a fast start
   * (answered already, or once the local password check passes).
   */
  private acquire(startup: Buffer, rest: Buffer, scram: LocalScram | null, remembered: LoginRecord | null): void {
    const w: Phase & { kind: 'waiting' } = { kind: 'waiting', abort: new AbortController(), stream: null, scram, rest, remembered };
    this.phase = w;
    this.host.acquireSession(w.abort.signal).then(
      (stream) => {
        if (this.phase !== w) {
          stream.on('error', () => undefined);
          stream.destroy(); // the local client left while we waited: nothing was sent
          return;
        }
        if (w.scram !== null) {
          // The local check is still under way: the StartupMessage leaves now, the answer waits.
          w.stream = stream;
          this.sendUp(stream, startup, Buffer.alloc(0));
          stream.on('error', this.onEarlyStreamError);
          return;
        }
        this.sendUp(stream, startup, w.rest);
        this.forward(stream, scram !== null || this.fast !== null);
      },
      (err: Error) => {
        if (this.phase !== w) return; // the local client went away meanwhile
        const f = this.host.acquireFailure(err);
        this.refuse(f.sqlstate, f.message);
      },
    );
  }

  private readonly onEarlyStreamError = (err: Error): void => {
    this.refuse(SQLSTATE.CONNECTION_FAILURE as RefusalCode, `quicpool agent: the stream to the pooler failed: ${err.message}`);
  };

  /** The StartupMessage (and whatever followed it): pipelined, in 0-RTT early data when resumed. */
  private sendUp(stream: QuicSessionStream, startup: Buffer | null, rest: Buffer): void {
    if (startup !== null && !stream.isHandshakeConfirmed) {
      this.early = true;
      this.host.counters.earlyStartups++;
    }
    const bytes = startup === null ? rest : rest.length === 0 ? startup : Buffer.concat([startup, rest]);
    this.host.counters.bytesUp += bytes.length;
    if (rest.length > 0) this.spoke = true;
    this.up.feed(rest); // typed messages only: the StartupMessage has no type byte
    if (bytes.length > 0) stream.write(bytes);
  }

  private readonly onAuthData = (chunk: Buffer): void => {
    const p = this.phase;
    if (p.kind !== 'waiting' || p.scram === null) return;
    const step = p.scram.feed(chunk);
    switch (step.kind) {
      case 'more':
        return;
      case 'send':
        this.socket.write(step.bytes);
        return;
      case 'fail':
        return this.refuse(step.sqlstate as RefusalCode, step.message);
      case 'ok': {
        if (this.authTimer !== null) clearTimeout(this.authTimer);
        this.socket.off('data', this.onAuthData);
        this.socket.pause();
        this.socket.write(step.bytes);
        this.host.counters.localLogins++;
        if (p.remembered !== null) this.answerLocally(p.remembered);
        p.scram = null;
        p.rest = step.rest;
        const stream = p.stream;
        if (stream === null) return; // acquire() forwards once the stream is there
        stream.off('error', this.onEarlyStreamError);
        if (step.rest.length > 0) this.sendUp(stream, null, step.rest);
        return this.forward(stream, true);
      }
      default: {
        const never: never = step;
        throw new Error(`unknown SCRAM step ${JSON.stringify(never)}`);
      }
    }
  };

  // --- forwarding ------------------------------------------------------------------------------

  /**
   * A fast start: the client gets the agent's own answer now (AuthenticationOk, the values the
   * pooler reported for this StartupMessage last time, a key of the agent's, ReadyForQuery).
   */
  private answerLocally(remembered: LoginRecord): void {
    const key = this.host.keys.issue(remembered.keyLength);
    this.fast = { announced: new Map(remembered.parameters), key };
    this.host.counters.fastStarts++;
    const answer = localLoginAnswer(remembered, key);
    this.down.feed(answer);
    this.socket.write(answer);
  }

  /**
   * Forwards both ways from now on. `answeredLocally`: the agent answered the client's
   * authentication (a local check or a fast start), so a password request from the pooler refuses
   * the session (28000). Until the login's ReadyForQuery the pooler's answer is read (learned for
   * the next fast start; in a fast start, absorbed: see login-answer.ts).
   */
  private forward(stream: QuicSessionStream, answeredLocally: boolean): void {
    this.phase = { kind: 'forwarding', stream };
    this.host.carried(this);
    const c = this.host.counters;
    c.sessions++;
    this.host.emit({ type: 'sessionStarted', user: this.user ?? '', database: this.database, peer: this.peer, early: this.early });
    const socket = this.socket;
    let login: LoginAnswer | null = new LoginAnswer(this.fast?.announced ?? null, answeredLocally);
    socket.on('data', (chunk: Buffer) => {
      if (this.phase.kind === 'refusing') return this.deliverRefusal(this.phase.error);
      this.spoke = true;
      c.bytesUp += chunk.length;
      this.up.feed(chunk);
      if (!stream.write(chunk)) {
        socket.pause(); // the stream's buffer is full: stop reading the local client
        c.pausedUp++;
      }
    });
    stream.on('drain', () => socket.resume());
    stream.on('data', (data: Buffer) => {
      let chunk = data;
      if (login !== null) {
        const step = login.feed(chunk);
        switch (step.kind) {
          case 'more':
            if (step.forward.length === 0) return;
            chunk = step.forward;
            break;
          case 'ready':
            login = null;
            this.loggedIn(step.record, step.key);
            chunk = step.forward.length === 0 ? step.rest : step.rest.length === 0 ? step.forward : Buffer.concat([step.forward, step.rest]);
            if (chunk.length === 0) return;
            break;
          case 'refused':
            // A fast start the pooler refused: its error in place of the first query's answer.
            login = null;
            this.forget();
            c.fastStartsRefused++;
            if (this.spoke) return this.deliverRefusal(step.forward);
            this.phase = { kind: 'refusing', error: step.forward };
            stream.on('error', () => undefined);
            stream.destroy();
            return;
          case 'passwordRequested':
            this.forget();
            return this.refuse(
              SQLSTATE.INVALID_AUTHORIZATION_SPECIFICATION as RefusalCode,
              `the pooler asks for a password for user "${this.user ?? ''}" after the agent's local check: let the pooler accept the agent's certificate for this user, or check locally with "pooler"`,
            );
          case 'broken':
            return this.refuse(SQLSTATE.PROTOCOL_VIOLATION as RefusalCode, `quicpool agent: ${step.reason}`);
          default: {
            const never: never = step;
            throw new Error(`unknown login step ${JSON.stringify(never)}`);
          }
        }
      }
      c.bytesDown += chunk.length;
      this.answered = true;
      this.down.feed(chunk);
      if (!socket.write(chunk)) {
        stream.pause(); // the local client reads slower than the pooler sends
        c.pausedDown++;
      }
    });
    socket.on('drain', () => stream.resume());
    stream.on('end', () => {
      if (this.phase.kind === 'forwarding' && !socket.destroyed) socket.end();
    });
    stream.on('error', (err: Error) => this.onStreamLost(err));
    stream.on('close', () => {
      if (this.phase.kind === 'forwarding') {
        if (!socket.destroyed) socket.end();
        this.finish('clean');
      }
    });
    socket.resume();
  }

  private deliverRefusal(error: Buffer): void {
    this.host.counters.bytesDown += error.length;
    this.socket.end(error);
    this.finish('refusedByPooler');
  }

  /** The pooler's login answer was read: remember it for the next fast start; map the agent's key. */
  private loggedIn(record: LoginRecord | null, key: BackendKey | null): void {
    const k = this.loginKey;
    if (k !== null) {
      const known = this.host.logins.get(k);
      if (record === null) this.host.logins.delete(k);
      else if (known === undefined || !sameRecord(known, record)) this.host.logins.set(k, record);
    }
    if (this.fast !== null && key !== null) this.host.keys.resolve(this.fast.key, key);
  }

  /** This StartupMessage's login is not to be fast-started again until it succeeds the long way. */
  private forget(): void {
    if (this.loginKey !== null) this.host.logins.delete(this.loginKey);
  }

  private onStreamLost(err: Error): void {
    if (this.phase.kind !== 'forwarding') return;
    this.host.counters.streamsLost++;
    if (!this.answered) {
      // Nothing came back yet: to the local client the connection never came up (e.g. the pooler
      // rejected the agent's certificate after the handshake looked done on our side).
      const f = this.host.acquireFailure(err);
      return this.refuse(f.sqlstate, f.message);
    }
    if (this.down.atBoundary && !this.socket.destroyed) {
      this.socket.end(errorResponse('FATAL', SQLSTATE.CONNECTION_FAILURE, `quicpool agent: the connection to the pooler was lost (${err.message})`));
    } else {
      this.socket.destroy(); // mid-message: nothing of ours can be put in between
    }
    this.finish('streamLost');
  }

  /** The local client half-closed: after Terminate pass the FIN on; otherwise it vanished. */
  private onLocalEnd(): void {
    const p = this.phase;
    if (p.kind === 'forwarding') {
      if (this.up.terminated) p.stream.end();
      else this.onLocalGone(true);
      return;
    }
    this.onLocalGone(false);
  }

  private onLocalGone(vanished: boolean): void {
    const p = this.phase;
    switch (p.kind) {
      case 'closed':
        return;
      case 'startup':
        this.stopStartup();
        this.phase = { kind: 'closed' };
        this.socket.destroy();
        return this.host.done(this, this.admitted);
      case 'checking':
        this.phase = { kind: 'closed' };
        this.socket.destroy();
        return this.host.done(this, this.admitted);
      case 'refusing':
        // Gone (or said goodbye) before asking anything: nothing to tell it.
        this.socket.destroy();
        return this.finish('refusedByPooler');
      case 'waiting':
        p.abort.abort(new Error('local client went away'));
        if (this.authTimer !== null) clearTimeout(this.authTimer);
        if (p.stream !== null) {
          p.stream.on('error', () => undefined);
          p.stream.destroy(new Error('local client went away'));
        }
        this.phase = { kind: 'closed' };
        this.socket.destroy();
        return this.host.done(this, this.admitted);
      case 'forwarding': {
        const goodbye = this.up.terminated && p.stream.writableEnded;
        if (goodbye && !vanished) {
          // Terminate and FIN already passed on: the pooler closes the stream; drop what is left.
          p.stream.resume();
          return this.finish('clean');
        }
        // A reset, not a FIN: the pooler ends the session and releases (rolls back) its backend.
        this.host.counters.clientsVanished++;
        this.socket.destroy();
        return this.finish('vanished');
      }
      default: {
        const never: never = p;
        throw new Error(`unknown phase ${JSON.stringify(never)}`);
      }
    }
  }

  // --- endings ---------------------------------------------------------------------------------

  private refuse(sqlstate: RefusalCode, reason: string): void {
    const p = this.phase;
    if (p.kind === 'closed') return;
    if (p.kind === 'startup') this.stopStartup();
    if (this.authTimer !== null) clearTimeout(this.authTimer);
    this.phase = { kind: 'closed' };
    const stream = p.kind === 'forwarding' ? p.stream : p.kind === 'waiting' ? p.stream : null;
    if (p.kind === 'waiting') p.abort.abort(new Error('local session refused'));
    if (stream !== null && !stream.destroyed) {
      stream.on('error', () => undefined);
      stream.destroy(new Error(`local session refused (${sqlstate})`));
    }
    const c = this.host.counters;
    c.refused[sqlstate] = (c.refused[sqlstate] ?? 0) + 1;
    this.host.emit({ type: 'refused', sqlstate, reason, peer: this.peer, user: this.user });
    if (!this.socket.destroyed) this.socket.end(errorResponse('FATAL', sqlstate, reason));
    this.ended();
  }

  private finish(how: SessionEnd): void {
    const p = this.phase;
    if (p.kind === 'closed') return;
    this.phase = { kind: 'closed' };
    if (p.kind === 'forwarding' || p.kind === 'refusing') {
      const durationMs = Math.round(performance.now() - this.started);
      this.host.emit({ type: 'sessionEnded', user: this.user ?? '', database: this.database, peer: this.peer, how, durationMs });
    }
    if (p.kind === 'forwarding') {
      if (!p.stream.destroyed && how !== 'clean') {
        p.stream.on('error', () => undefined);
        p.stream.destroy(new Error(`local session ended (${how})`));
      }
    }
    if (p.kind === 'waiting') p.abort.abort(new Error('local session ended'));
    this.ended();
  }

  private ended(): void {
    if (this.fast !== null) this.host.keys.release(this.fast.key);
    this.host.done(this, this.admitted);
  }
}
