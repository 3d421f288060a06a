// One server connection. Its state and the pool list it sits in change together, only through
// Pool.setState; this class holds the connection's own facts and routes what the server sends.
import type net from 'node:net';
import { decodeBackendMessage, readyForQueryStatus } from '@quicpool/wire';
import type { BackendDecoder, RawMessage } from '@quicpool/wire';
import { BatchedWriter } from '../driver/batched-writer.js';
import type { BackendConnection } from './connect.js';
import type { SocketInput } from './socket-input.js';

export type BackendState =
  /** In the pool, free. */
  | 'idle'
  /** Attached to a client session. */
  | 'active'
  /** Running the pooler's own rollback/reset queries before it may be reused. */
  | 'resetting'
  | 'closed';

/** The client session a backend is attached to. */
export interface BackendOwner {
  onBackendMessage(message: RawMessage): void;
  onBackendLost(reason: string): void;
}

const T_PARAMETER_STATUS = 0x53;
const T_READY = 0x5a;
const T_ERROR = 0x45;

let nextId = 1;

export class Backend {
  readonly id = nextId++;
  readonly socket: net.Socket;
  readonly processId: number;
  readonly secretKey: Buffer;
  /** Current reported values (ParameterStatus), updated as the server reports changes. */
  readonly parameters: Map<string, string>;
  /** Bumped whenever a value in `parameters` changes. */
  parametersVersion = 0;
  /** The session's memo of the last client parameters this backend matched (see AttachedBackend). */
  readonly trackedMatch = { signature: '', version: -1 };
  readonly createdAt: number;
  lastUsedAt: number;
  /** Changed only by Pool.setState. */
  state: BackendState = 'idle';
  owner: BackendOwner | null = null;
  /** While resetting: ReadyForQuery messages still expected, and whether any query failed. */
  resetPending = 0;
  resetFailed = false;
  private readonly decoder: BackendDecoder;
  /** A client's pipeline (Parse/Bind/Describe/Execute/Sync) leaves in one write per turn. */
  private readonly writer: BatchedWriter;

  constructor(
    c: BackendConnection,
    now: number,
    private readonly events: { onResetDone(b: Backend): void; onClosed(b: Backend, reason: string): void },
  ) {
    this.socket = c.socket;
    this.decoder = c.decoder;
    this.processId = c.processId;
    this.secretKey = c.secretKey;
    this.parameters = c.parameters;
    this.createdAt = now;
    this.lastUsedAt = now;
    this.writer = new BatchedWriter(c.socket);
    const input = c.input;
    if (input === undefined) c.socket.on('data', (chunk: Buffer) => this.onData(chunk));
    else {
      input.setConsumer((chunk) => this.onRead(chunk, input));
      // Bytes that came between the login and now wait in the decoder: route them (next turn: the
      // pool places this backend first).
      if (c.decoder.bufferedBytes > 0) queueMicrotask(() => this.onData(Buffer.alloc(0)));
    }
    c.socket.on('error', (e: Error) => this.lost(e.message));
    c.socket.on('close', () => this.lost('server closed the connection'));
  }

  /** Forwarded client messages: collected and written once per event-loop turn. */
  write(bytes: Buffer): boolean {
    return this.writer.write(bytes);
  }

  /** The pooler's own queries (rollback, reset, health check): written at once, after anything collected. */
  writeNow(bytes: Buffer): boolean {
    this.writer.flush();
    return this.socket.write(bytes);
  }

  /** Closes the connection politely (Terminate) or abruptly; the pool hears of it via onClosed. */
  close(): void {
    if (this.socket.destroyed) return;
    this.writer.flush();
    this.socket.end(TERMINATE);
    this.socket.destroySoon();
  }

  /**
   * A read into the input's reused buffer: everything it caused is written out before returning
   * (instead of at the end of the turn), so the buffer can be reused unless something still holds
   * a view of it: a partial message in the decoder, or a write that kept its bytes.
   */
  private onRead(chunk: Buffer, input: SocketInput): void {
    BatchedWriter.beginCycle();
    this.onData(chunk);
    if (!BatchedWriter.flushAll() || this.decoder.bufferedBytes > 0) input.retain();
  }

  private onData(chunk: Buffer): void {
    try {
      this.decoder.push(chunk);
      for (let m = this.decoder.nextRaw(); m !== undefined; m = this.decoder.nextRaw()) this.route(m);
    } catch (e) {
      this.socket.destroy();
      this.lost(`protocol error from server: ${(e as Error).message}`);
    }
  }

  private route(m: RawMessage): void {
    if (m.type === T_PARAMETER_STATUS) {
      const p = decodeBackendMessage(m.bytes);
      if (p.type === 'ParameterStatus' && this.parameters.get(p.name) !== p.value) {
        this.parameters.set(p.name, p.value);
        this.parametersVersion++;
      }
    }
    switch (this.state) {
      case 'active':
        this.owner?.onBackendMessage(m);
        return;
      case 'resetting':
        if (m.type === T_ERROR) this.resetFailed = true;
        if (m.type === T_READY && readyForQueryStatus(m.bytes) !== undefined && --this.resetPending === 0) this.events.onResetDone(this);
        return;
      case 'idle':
        // Only asynchronous messages can arrive; an error here means the server is ending us.
        if (m.type === T_ERROR) this.socket.destroy();
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

const TERMINATE = Buffer.from([0x58, 0, 0, 0, 4]);
