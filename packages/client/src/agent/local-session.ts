// One local client connection of the agent: answer its SSLRequest/GSSENCRequest with 'N', then
// either carry its CancelRequest on a fresh QUIC stream or get a stream for its session, send the
// StartupMessage at once (in 0-RTT early data on a resumed connection) and forward raw bytes both
// ways with backpressure both ways. Errors reach the local client as an ErrorResponse with a real
// SQLSTATE whenever a message boundary allows one; a client that goes away without Terminate gets
// its stream reset, so the pooler releases its backend.
import type { Socket } from 'node:net';
import { errorResponse, SQLSTATE } from '@quicpool/wire';
import type { QuicSessionStream } from '@quicpool/transport';
import { readFirstPacket } from './first-packet.js';
import { MessageBoundary } from './message-boundary.js';
import type { AgentCounters, AgentEvent, RefusalCode } from './stats.js';

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
  /** Maps an acquire failure to what the local client is told. */
  acquireFailure(err: Error): { sqlstate: RefusalCode; message: string };
}

/** At most this many SSLRequest/GSSENCRequest packets before a StartupMessage (libpq sends up to 2). */
const MAX_ENCRYPTION_REQUESTS = 2;
const NO = Buffer.from('N');

type Phase =
  | { kind: 'startup'; buf: Buffer; requests: number }
  | { kind: 'waiting'; abort: AbortController }
  | { kind: 'forwarding'; stream: QuicSessionStream }
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

  constructor(
    private readonly socket: Socket,
    private readonly host: SessionHost,
    readonly peer: string,
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
        case 'encryptionRequest':
          if (++p.requests > MAX_ENCRYPTION_REQUESTS) return this.refuse(SQLSTATE.PROTOCOL_VIOLATION as RefusalCode, `more than ${MAX_ENCRYPTION_REQUESTS} encryption requests`);
          this.host.counters.encryptionDeclined++;
          this.socket.write(NO);
          p.buf = p.buf.subarray(r.length);
          if (p.buf.length === 0) return;
          continue;
        case 'cancel':
          return this.cancel(r.bytes);
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

  private cancel(packet: Buffer): void {
    this.stopStartup();
    this.phase = { kind: 'closed' };
    this.host.counters.cancels++;
    this.host.emit({ type: 'cancel', peer: this.peer });
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
    this.host.done(this, false);
  }

  private startSession(parameters: Readonly<Record<string, string>>, startup: Buffer, rest: Buffer): void {
    this.stopStartup();
    this.user = parameters['user'] ?? '';
    this.database = parameters['database'] ?? this.user;
    const admission = this.host.admit();
    if (!admission.ok) return this.refuse(admission.sqlstate, admission.reason);
    this.admitted = true;
    const abort = new AbortController();
    this.phase = { kind: 'waiting', abort };
    // Copy: `startup` and `rest` may share the socket's buffer.
    const first = Buffer.from(rest.length === 0 ? startup : Buffer.concat([startup, rest]));
    this.up.feed(first.subarray(startup.length));
    this.host.acquireSession(abort.signal).then(
      (stream) => this.forward(stream, first),
      (err: Error) => {
        if (this.phase.kind !== 'waiting') return; // the local client went away meanwhile
        const f = this.host.acquireFailure(err);
        this.refuse(f.sqlstate, f.message);
      },
    );
  }

  // --- forwarding ------------------------------------------------------------------------------

  private forward(stream: QuicSessionStream, first: Buffer): void {
    if (this.phase.kind !== 'waiting') {
      stream.on('error', () => undefined);
      stream.destroy(); // the local client left while we waited: nothing was sent
      return;
    }
    this.phase = { kind: 'forwarding', stream };
    this.host.carried(this);
    const c = this.host.counters;
    c.sessions++;
    const early = !stream.isHandshakeConfirmed;
    if (early) c.earlyStartups++;
    this.host.emit({ type: 'sessionStarted', user: this.user ?? '', database: this.database, peer: this.peer, early });
    // The StartupMessage (and whatever followed it) leaves now: pipelined, in 0-RTT when resumed.
    c.bytesUp += first.length;
    stream.write(first);
    const socket = this.socket;
    socket.on('data', (chunk: Buffer) => {
      c.bytesUp += chunk.length;
      this.up.feed(chunk);
      if (!stream.write(chunk)) socket.pause();
    });
    stream.on('drain', () => socket.resume());
    stream.on('data', (chunk: Buffer) => {
      c.bytesDown += chunk.length;
      this.down.feed(chunk);
      if (!socket.write(chunk)) stream.pause();
    });
    socket.on('drain', () => stream.resume());
    stream.on('end', () => {
      if (!socket.destroyed) socket.end();
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

  private onStreamLost(err: Error): void {
    if (this.phase.kind !== 'forwarding') return;
    this.host.counters.streamsLost++;
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
      case 'waiting':
        p.abort.abort(new Error('local client went away'));
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
    if (this.phase.kind === 'closed') return;
    if (this.phase.kind === 'startup') this.stopStartup();
    this.phase = { kind: 'closed' };
    const c = this.host.counters;
    c.refused[sqlstate] = (c.refused[sqlstate] ?? 0) + 1;
    this.host.emit({ type: 'refused', sqlstate, reason, peer: this.peer, user: this.user });
    if (!this.socket.destroyed) this.socket.end(errorResponse('FATAL', sqlstate, reason));
    this.host.done(this, this.admitted);
  }

  private finish(how: 'clean' | 'vanished' | 'streamLost' | 'drained'): void {
    const p = this.phase;
    if (p.kind === 'closed') return;
    this.phase = { kind: 'closed' };
    if (p.kind === 'forwarding') {
      const durationMs = Math.round(performance.now() - this.started);
      this.host.emit({ type: 'sessionEnded', user: this.user ?? '', database: this.database, peer: this.peer, how, durationMs });
      if (!p.stream.destroyed && how !== 'clean') {
        p.stream.on('error', () => undefined);
        p.stream.destroy(new Error(`local session ended (${how})`));
      }
    }
    if (p.kind === 'waiting') p.abort.abort(new Error('local session ended'));
    this.host.done(this, this.admitted);
  }
}
