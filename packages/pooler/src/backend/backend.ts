// One server connection. Its state and the pool list it sits in change together, only through
// BackendLists.move; this class holds the connection's own facts and routes what the server sends.
import { bufferView, decodeBackendMessage, encodeFrontend, MessageType, readyForQueryStatus } from '@quicpool/wire';
import type { BackendDecoder, RawMessage } from '@quicpool/wire';
import type { SessionStream } from '@quicpool/transport';
import type { BatchedWriter, WriteBatcher } from '../runtime/write-batcher.js';
import type { Clock } from '../runtime/clock.js';
import type { BackendConnection } from './connect.js';
import type { SocketInput } from './socket-input.js';
import type { ServerAddress } from './dial.js';
import { ROLE_PARAMETERS, roleFromParameters } from './server-role.js';
import type { ServerRole } from './server-role.js';
import { ServerSessionState } from './session-state.js';
import type { Link, Waiter } from './link.js';

export type BackendState =
  /** In the pool, free. */
  | 'idle'
  /** Attached to a client session. */
  | 'active'
  /** Running the pooler's own rollback/reset queries before it may be reused. */
  | 'resetting'
  | 'closed';

export class Backend {
  /** The server (one of upstream's hosts) this connection reached; also where its cancels go. */
  readonly server: ServerAddress;
  /** The server connection (TCP, unix socket or TLS, from the transport). */
  readonly stream: SessionStream;
  readonly processId: number;
  readonly secretKey: Buffer;
  /** Current reported values (ParameterStatus), updated as the server reports changes. */
  readonly parameters: Map<string, string>;
  /** Bumped whenever a value in `parameters` changes. */
  parametersVersion = 0;
  /** What the client sessions keep on this server connection (outlives each link). */
  readonly sessionState = new ServerSessionState();
  readonly createdAt: number;
  /** Wall-clock time it was opened (epoch ms), for display. */
  readonly connectedAtWall = Date.now();
  lastUsedAt: number;
  /** Changed only by BackendLists.move (the pool's). */
  state: BackendState = 'idle';
  /** Its lending to a client while 'active' (made and ended by the pool only). */
  link: Link | null = null;
  /** Its server no longer suits the pool (target_session_attrs): closed when it comes back. */
  unsuitable = false;
  /** The role an older server told at login (PostgreSQL 14+ reports it in `parameters`). */
  private readonly loginRole: ServerRole | undefined;
  /** Maintenance closes it and reserved that in the daemon-wide count (see Maintenance.mayCloseIdle in pool/maintenance.ts). */
  closeReserved = false;
  /** While resetting: ReadyForQuery messages still expected, and whether any query failed. */
  resetPending = 0;
  resetFailed = false;
  private readonly decoder: BackendDecoder;
  /** A client's pipeline (Parse/Bind/Describe/Execute/Sync) leaves in one write per turn. */
  private readonly writer: BatchedWriter;
  /** Messages of one read that `runClient` only forwards: runBuffer[runStart, runEnd) (see onData). */
  private runClient: Waiter | null = null;
  private runBuffer: Buffer | null = null;
  private runStart = 0;
  private runEnd = 0;

  constructor(
    c: BackendConnection,
    private readonly clock: Clock,
    private readonly batcher: WriteBatcher,
    private readonly events: {
      onResetDone(b: Backend): void;
      onClosed(b: Backend, reason: string): void;
      /** The server reported a change of in_hot_standby or default_transaction_read_only. */
      onRoleChanged?(b: Backend): void;
      /** The connection is closed (see close and closeWhenServerDone). */
      onGone?(b: Backend): void;
    },
  ) {
    const now = clock.now();
    this.stream = c.stream;
    this.server = c.server;
    this.loginRole = c.role;
    this.decoder = c.decoder;
    this.processId = c.processId;
    this.secretKey = c.secretKey;
    this.parameters = c.parameters;
    this.createdAt = now;
    this.lastUsedAt = now;
    this.writer = batcher.writer(c.stream);
    const input = c.input;
    if (input === null) {
      // TLS: 'data' events; the login left the stream paused.
      c.stream.on('data', (chunk: Buffer) => this.onData(chunk));
      c.stream.resume();
    } else {
      input.setConsumer((chunk, length) => this.onRead(chunk, length, input));
    }
    // Bytes that came between the login and now wait in the decoder: route them (next turn: the
    // pool places this backend first).
    if (c.decoder.bufferedBytes > 0) queueMicrotask(() => this.onData(Buffer.alloc(0)));
    c.stream.on('error', (e: Error) => this.lost(e.message));
    // The transport keeps half-open streams open; a server never half-closes, so its end is the end.
    c.stream.on('end', () => this.lost('server closed the connection'));
    c.stream.on('close', () => {
      this.lost('server closed the connection');
      this.events.onGone?.(this);
    });
  }

  /** Standby or read-only, as the server last said. */
  get role(): ServerRole | undefined {
    return roleFromParameters(this.parameters) ?? this.loginRole;
  }

  /** Forwarded client messages: collected and written once per event-loop turn. */
  write(bytes: Buffer): boolean {
    return this.writer.write(bytes);
  }

  /** Written at once, after anything collected (the pooler's own queries, the plain lane's). */
  writeNow(bytes: Buffer): boolean {
    return this.writer.writeNow(bytes);
  }

  /** Stop reading the server until `resume()` (its client is not reading). */
  pause(): void {
    this.stream.pause();
  }

  resume(): void {
    if (this.state !== 'closed') this.stream.resume();
  }

  /** Calls `fn` once when the server connection can take writes again. */
  onceWritable(fn: () => void): void {
    this.stream.once('drain', fn);
  }

  /** Closes the connection (Terminate, then our end); the pool hears of it via onClosed. */
  close(): void {
    if (this.stream.destroyed) return;
    this.writer.end(TERMINATE);
    // A server that does not close its end after Terminate must not hold the connection open.
    this.stream.once('finish', () => this.stream.destroy());
  }

  /**
   * Closes an idle connection and lets the server close its end: it does so once its backend
   * process has exited, so the connection is gone from pg_stat_activity when `onGone` reports it
   * (the server budget handed to another worker is never two connections at once). A server that
   * keeps its end open longer than TERMINATE_WAIT_MS is cut off.
   */
  closeWhenServerDone(): void {
    if (this.stream.destroyed) return;
    this.writer.end(TERMINATE);
    const timer = this.clock.setTimer(() => this.stream.destroy(), TERMINATE_WAIT_MS);
    this.stream.once('close', () => this.clock.clearTimer(timer));
  }

  /**
   * Terminate, then the end of input, after everything forwarded: the server answers what came
   * before, then closes (its client ended with requests unanswered). The pool hears via onClosed.
   */
  finish(): void {
    if (this.stream.destroyed) return;
    this.writer.end(TERMINATE);
  }

  /** Drops the connection at once (the pool already forgot it). */
  destroy(): void {
    this.stream.destroy();
  }

  /**
   * A read into the input's reused buffer: everything it caused is written out before returning
   * (instead of at the end of the turn), so the buffer can be reused unless something still holds
   * a view of it: a partial message in the decoder, or a write that kept its bytes.
   */
  private onRead(chunk: Buffer, length: number, input: SocketInput): void {
    let unreferenced = false;
    this.batcher.beginCycle();
    try {
      if (!this.plainAnswer(chunk, length)) this.onData(chunk, length);
    } finally {
      unreferenced = this.batcher.endCycle();
    }
    if (!unreferenced || this.decoder.bufferedBytes > 0) input.retain();
  }

  /** A read that starts at a message boundary: the client may take it at once as its whole answer (see Waiter.plainAnswer). */
  private plainAnswer(chunk: Buffer, length: number): boolean {
    if (this.state !== 'active' || this.decoder.bufferedBytes !== 0) return false;
    const client = this.link?.client;
    if (client?.plainAnswer === undefined || !client.plainAnswer(chunk, length)) return false;
    this.decoder.skip(length);
    return true;
  }

  private onData(chunk: Buffer, length: number = chunk.length): void {
    const d = this.decoder;
    try {
      d.push(chunk, length);
      for (let type = d.advance(); type >= 0; type = d.advance()) {
        // Messages the client only forwards (rows, row descriptions, plain CommandCompletes) go to
        // it as one view per run of them: no message object, no view, no session event each.
        const client = this.state === 'active' ? (this.link?.client ?? null) : null;
        if (client !== null && type !== MessageType.ParameterStatus && client.passesThrough?.(type, d.frameBuffer, d.frameStart) === true) {
          if (this.runBuffer !== d.frameBuffer || this.runEnd !== d.frameStart || this.runClient !== client) {
            this.forwardRun();
            this.runClient = client;
            this.runBuffer = d.frameBuffer;
            this.runStart = d.frameStart;
          }
          this.runEnd = d.frameEnd;
          continue;
        }
        this.forwardRun();
        this.route({ type, bytes: d.frameBytes() });
      }
      this.forwardRun();
    } catch (e) {
      // What came before the malformed bytes still reaches the client first.
      this.forwardRun();
      this.stream.destroy();
      this.lost(`protocol error from server: ${(e as Error).message}`);
    }
  }

  /** The run of pass-through messages collected (see onData) goes to its client. */
  private forwardRun(): void {
    const buffer = this.runBuffer;
    if (buffer === null) return;
    const client = this.runClient!;
    this.runBuffer = null;
    this.runClient = null;
    client.forward!(bufferView(buffer, this.runStart, this.runEnd));
  }

  private route(m: RawMessage): void {
    if (m.type === MessageType.ParameterStatus) {
      const p = decodeBackendMessage(m.bytes);
      if (p.type === 'ParameterStatus' && this.parameters.get(p.name) !== p.value) {
        this.parameters.set(p.name, p.value);
        this.parametersVersion++;
        if (ROLE_PARAMETERS.has(p.name)) this.events.onRoleChanged?.(this);
      }
    }
    switch (this.state) {
      case 'active':
        this.link?.client.onBackendMessage(m);
        return;
      case 'resetting':
        if (m.type === MessageType.ErrorResponse) this.resetFailed = true;
        if (m.type === MessageType.ReadyForQuery && readyForQueryStatus(m.bytes) !== undefined && --this.resetPending === 0) this.events.onResetDone(this);
        return;
      case 'idle':
        // Only asynchronous messages can arrive; an error here means the server is ending us.
        if (m.type === MessageType.ErrorResponse) this.stream.destroy();
        return;
      case 'closed':
        return;
      default: {
        const never: never = this.state;
        throw new Error(`unhandled backend state ${String(never)}`);
      }
    }
  }

  private lost(reason: string): void {
    if (this.state === 'closed') return;
    this.events.onClosed(this, reason);
  }
}

const TERMINATE = encodeFrontend({ type: 'Terminate' });
/** How long a server may take to close its end after Terminate before we drop the connection. */
const TERMINATE_WAIT_MS = 5_000;
