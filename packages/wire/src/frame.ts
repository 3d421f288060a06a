import { MessageType } from './common.js';
import { ProtocolError } from './errors.js';
import { view } from './reader.js';
import {
  CANCEL_REQUEST_CODE,
  GSSENC_REQUEST_CODE,
  SSL_REQUEST_CODE,
} from './startup-codes.js';

/**
 * One whole protocol message as it was on the wire, for forwarding.
 * `bytes` includes the header and is a view into a pushed chunk (no copy) whenever
 * the message arrived inside one chunk. `type` is the Byte1 type code, or 0 for a
 * startup-phase packet (StartupMessage, SSLRequest, GSSENCRequest, CancelRequest).
 */
/** The Int32 length field of the typed message whose type byte is `buf[at]` (it counts itself and the body). */
export function messageLength(buf: Uint8Array, at: number): number {
  return (buf[at + 1]! << 24) | (buf[at + 2]! << 16) | (buf[at + 3]! << 8) | buf[at + 4]!;
}

export interface RawMessage {
  readonly type: number;
  readonly bytes: Buffer;
}

export interface DecoderLimits {
  /** Largest accepted value of a typed message's Int32 length field. Default 64 MiB. */
  maxMessageSize?: number;
  /** Largest accepted startup-phase packet (Postgres: MAX_STARTUP_PACKET_LENGTH). Default 10 000. */
  maxStartupPacketSize?: number;
}

export const DEFAULT_MAX_MESSAGE_SIZE = 64 * 1024 * 1024;
export const DEFAULT_MAX_STARTUP_PACKET_SIZE = 10_000;
/** Postgres's PQ_SMALL_MESSAGE_LIMIT: the bound for messages that only carry names. */
export const SMALL_MESSAGE_LIMIT = 10_000;

const EMPTY = Buffer.alloc(0);

const enum Mode {
  Typed,
  Startup,
  /** After a CancelRequest nothing more may follow on the connection. */
  Closed,
}

/**
 * Chunk-to-message framing shared by the frontend and backend decoders.
 *
 * Hot path: when a pushed chunk holds whole messages they are returned as
 * subarrays of it, no copy, no concat. Only a message that straddles chunks is
 * gathered (its pieces are kept as views and joined once when complete), so a
 * large message never causes repeated copying. Every length is checked before
 * anything is buffered for it. After a ProtocolError the framer stays failed.
 *
 * Pushed chunks must not be mutated afterwards: returned messages may view them.
 */
export class Framer {
  private buf: Buffer = EMPTY;
  private pos = 0;
  private bufEnd = 0;
  /** Stream offset of buf[0]. */
  private bufOffset = 0;
  /** Chunks pushed before `buf` was drained, in order; bytes held in them. */
  private queued: Buffer[] = [];
  private queuedBytes = 0;

  private pend: Buffer[] | null = null;
  private pendLen = 0;
  /** Total size of the pending message, or -1 while its header is incomplete. */
  private pendTotal = -1;
  private pendOffset = 0;

  private mode: Mode;
  private failure: ProtocolError | null = null;
  /** Largest accepted Int32 length per type byte; 0 means unknown type. */
  private readonly limits: Int32Array;
  private readonly maxStartup: number;

  /** Stream offset of the first byte of the message returned last. */
  messageOffset = 0;
  /** The last message framed is frameBuffer[frameStart, frameEnd) (see `advance`). */
  frameBuffer: Buffer = EMPTY;
  frameStart = 0;
  frameEnd = 0;

  constructor(limitsByType: Int32Array, startup: boolean, opts: DecoderLimits = {}) {
    this.limits = limitsByType;
    this.mode = startup ? Mode.Startup : Mode.Typed;
    const maxStartup = opts.maxStartupPacketSize ?? DEFAULT_MAX_STARTUP_PACKET_SIZE;
    // Below 2^24 the first byte of a startup packet is always 0, its raw `type`.
    if (!(maxStartup >= 8 && maxStartup < 0x1000000)) throw new RangeError(`bad maxStartupPacketSize ${maxStartup}`);
    this.maxStartup = maxStartup;
  }

  /** True while the next message is a startup-phase packet (no type byte). */
  get inStartup(): boolean {
    return this.mode === Mode.Startup;
  }

  /**
   * Expect a startup-phase packet next. The decoder already does this after
   * SSLRequest/GSSENCRequest; this is for owners that reuse a decoder. Call at a message boundary.
   */
  expectStartup(): void {
    if (this.pend !== null) throw new Error('expectStartup() inside a partially received message');
    this.mode = Mode.Startup;
  }

  /** Bytes received but not yet returned as messages. */
  get bufferedBytes(): number {
    return this.bufEnd - this.pos + this.pendLen + this.queuedBytes;
  }

  /** The error that failed this decoder, if any. */
  get error(): ProtocolError | null {
    return this.failure;
  }

  /**
   * Adds received bytes: `chunk`'s first `length` bytes (all of it by default), so a reader that
   * read into a larger buffer need not make a view of what it read.
   */
  push(chunk: Buffer, length: number = chunk.length): void {
    if (this.failure !== null) throw this.failure;
    if (length === 0) return;
    if (!(length > 0 && length <= chunk.length)) throw new RangeError(`bad length ${length} for a chunk of ${chunk.length} bytes`);
    if (this.pos === this.bufEnd && this.queued.length === 0) {
      this.bufOffset += this.bufEnd;
      this.buf = chunk;
      this.pos = 0;
      this.bufEnd = length;
    } else {
      // The owner pushed before draining: queue it, no copy (rare path).
      this.queued.push(length === chunk.length ? chunk : chunk.subarray(0, length));
      this.queuedBytes += length;
    }
  }

  /**
   * The owner handled `length` received bytes itself, whole messages at a boundary (nothing is
   * buffered here): they count in the stream offsets that errors report, as if pushed and drained.
   */
  skip(length: number): void {
    if (this.bufferedBytes !== 0) throw new Error('skip() with a partially received message buffered');
    this.bufOffset += length;
  }

  /** When `buf` is used up, move on to the next queued chunk; false if none. */
  private shiftQueued(): boolean {
    const next = this.queued.shift();
    if (next === undefined) return false;
    this.queuedBytes -= next.length;
    this.bufOffset += this.bufEnd;
    this.buf = next;
    this.pos = 0;
    this.bufEnd = next.length;
    return true;
  }

  /**
   * Signal end of input: throws ProtocolError if an incomplete message is buffered.
   * Call after draining.
   */
  end(): void {
    if (this.failure !== null) throw this.failure;
    const n = this.bufferedBytes;
    if (n > 0) this.fail(`stream ended inside a message (${n} byte(s) buffered)`, this.bufOffset + this.bufEnd + this.queuedBytes);
  }

  protected fail(message: string, offset: number): never {
    this.failure = new ProtocolError(message, offset);
    throw this.failure;
  }

  /** Typed decoding failed on a framed message: the decoder stays failed. */
  protected failWith(e: unknown): never {
    if (e instanceof ProtocolError) this.failure = e;
    throw e;
  }

  /**
   * Zero-allocation framing (the forwarding hot path): move to the next whole
   * message and return its type byte (0 for a startup packet), or -1 until more
   * bytes arrive. The message is `frameBuffer[frameStart, frameEnd)`, header
   * included, valid until the buffer is released by the owner; consecutive
   * messages of one chunk are adjacent, so runs of them can be forwarded as one
   * subarray.
   */
  advance(): number {
    if (this.failure !== null) throw this.failure;
    if (this.pend !== null) return this.continuePending();
    if (this.pos === this.bufEnd && !this.shiftQueued()) return -1;
    const pos = this.pos;
    const avail = this.bufEnd - pos;
    const buf = this.buf;
    if (this.mode === Mode.Typed) {
      const type = buf[pos]!;
      const limit = this.limits[type]!;
      if (limit === 0) this.unknownType(type, this.bufOffset + pos);
      if (avail >= 5) {
        const len = messageLength(buf, pos);
        if (len < 4 || len > limit) this.badLength(type, len, limit, this.bufOffset + pos + 1);
        const next = pos + len + 1;
        if (next <= this.bufEnd) {
          this.pos = next;
          this.frameBuffer = buf;
          this.frameStart = pos;
          this.frameEnd = next;
          this.messageOffset = this.bufOffset + pos;
          return type;
        }
      }
    } else if (this.mode === Mode.Closed) {
      this.fail('data after CancelRequest', this.bufOffset + pos);
    } else if (buf[pos] === MessageType.Terminate && this.limits[MessageType.Terminate] !== 0) {
      // A client that ends before its startup packet (node-postgres's end() right after
      // connect()) sends Terminate. No startup packet starts with a nonzero byte (see
      // maxStartup), so it is framed as the typed message it is; its owner closes in silence,
      // as Postgres does, instead of reporting a startup length of 1476395008.
      this.mode = Mode.Typed;
      return this.advance();
    }
    // Incomplete: gather it. Startup packets always take this path (cold).
    this.pend = [];
    this.pendLen = 0;
    this.pendTotal = -1;
    this.pendOffset = this.bufOffset + pos;
    return this.continuePending();
  }

  /** The current message's bytes (a view, no copy; allocates the view). */
  frameBytes(): Buffer {
    const b = this.frameBuffer;
    return this.frameStart === 0 && this.frameEnd === b.length ? b : view(b, this.frameStart, this.frameEnd);
  }

  /** Next whole message (header included), or undefined until more bytes arrive. */
  nextFrame(): Buffer | undefined {
    return this.advance() < 0 ? undefined : this.frameBytes();
  }

  private continuePending(): number {
    const pend = this.pend!;
    const header = this.mode === Mode.Typed ? 5 : 4;
    for (;;) {
      if (this.pos === this.bufEnd && !this.shiftQueued()) return -1;
      if (this.pendTotal < 0) {
        const n = Math.min(header - this.pendLen, this.bufEnd - this.pos);
        pend.push(this.buf.subarray(this.pos, this.pos + n));
        this.pos += n;
        this.pendLen += n;
        if (this.pendLen < header) continue;
        const h = pend.length === 1 ? pend[0]! : Buffer.concat(pend, header);
        this.pendTotal = this.checkHeader(h);
      }
      const n = Math.min(this.pendTotal - this.pendLen, this.bufEnd - this.pos);
      if (n > 0) {
        pend.push(this.buf.subarray(this.pos, this.pos + n));
        this.pos += n;
        this.pendLen += n;
      }
      if (this.pendLen === this.pendTotal) break;
    }
    const frame = pend.length === 1 ? pend[0]! : Buffer.concat(pend, this.pendTotal);
    this.pend = null;
    this.pendLen = 0;
    this.pendTotal = -1;
    this.messageOffset = this.pendOffset;
    this.frameBuffer = frame;
    this.frameStart = 0;
    this.frameEnd = frame.length;
    if (this.mode === Mode.Typed) return frame[0]!;
    this.afterStartupPacket(frame);
    return 0;
  }

  /** Validate a complete header; returns the whole message size. */
  private checkHeader(h: Buffer): number {
    const at = this.pendOffset;
    if (this.mode === Mode.Typed) {
      const type = h[0]!;
      const limit = this.limits[type]!;
      if (limit === 0) this.unknownType(type, at);
      const len = h.readInt32BE(1);
      if (len < 4 || len > limit) this.badLength(type, len, limit, at + 1);
      return len + 1;
    }
    if (this.mode === Mode.Closed) this.fail('data after CancelRequest', at);
    const len = h.readInt32BE(0);
    if (len < 8 || len > this.maxStartup) {
      this.fail(`invalid startup packet length ${len} (allowed 8..${this.maxStartup})`, at);
    }
    return len;
  }

  /** Startup packets decide what follows them. */
  private afterStartupPacket(frame: Buffer): void {
    const code = frame.readInt32BE(4);
    if (code === SSL_REQUEST_CODE || code === GSSENC_REQUEST_CODE) return; // another startup packet follows
    if (code === CANCEL_REQUEST_CODE) {
      this.mode = Mode.Closed;
      return;
    }
    if (code >>> 16 === 3) {
      this.mode = Mode.Typed;
      return;
    }
    this.fail(`unsupported frontend protocol ${code >>> 16}.${code & 0xffff}`, this.messageOffset + 4);
  }

  private unknownType(type: number, at: number): never {
    this.fail(`unknown message type ${describeType(type)}`, at);
  }

  private badLength(type: number, len: number, limit: number, at: number): never {
    this.fail(`invalid length ${len} for message type ${describeType(type)} (allowed 4..${limit})`, at);
  }
}

export function describeType(type: number): string {
  return type >= 0x20 && type < 0x7f ? `'${String.fromCharCode(type)}'` : `0x${type.toString(16).padStart(2, '0')}`;
}

/** Per-type length limits: `types` maps type characters to their limit. */
export function limitTable(types: Record<string, number>): Int32Array {
  const t = new Int32Array(256);
  for (const [ch, limit] of Object.entries(types)) t[ch.charCodeAt(0)] = limit;
  return t;
}
