import { Framer, DEFAULT_MAX_MESSAGE_SIZE, limitTable } from '../frame.js';
import type { DecoderLimits, RawMessage } from '../frame.js';
import { Reader } from '../reader.js';
import { decodeBackendBody } from './decode.js';
import type { BackendMessage } from './messages.js';

const BACKEND_TYPES = 'R K 2 3 C d c G H W D I E V v n N A t S 1 s Z T'.split(' ');

/**
 * Decodes the byte stream a server sends. Push chunks, then drain with `next()`
 * (typed) or `nextRaw()` (framing only, for forwarding) until undefined:
 *
 *   dec.push(chunk);
 *   for (let m = dec.nextRaw(); m !== undefined; m = dec.nextRaw()) forward(m.bytes);
 *
 * Both may be mixed (e.g. raw for DataRow, `decodeBackendMessage` on demand).
 * Throws ProtocolError (sqlstate 08P01, stream offset) on malformed input and then stays failed.
 */
export class BackendDecoder extends Framer {
  private readonly reader = new Reader();

  constructor(opts: DecoderLimits = {}) {
    const max = opts.maxMessageSize ?? DEFAULT_MAX_MESSAGE_SIZE;
    if (!(max >= 4 && max <= 0x7fffffff)) throw new RangeError(`bad maxMessageSize ${max}`);
    super(limitTable(Object.fromEntries(BACKEND_TYPES.map((t) => [t, max]))), false, opts);
  }

  /** Next whole message as raw bytes, or undefined until more bytes arrive. */
  nextRaw(): RawMessage | undefined {
    const type = this.advance();
    return type < 0 ? undefined : { type, bytes: this.frameBytes() };
  }

  /** Next message decoded, or undefined until more bytes arrive. */
  next(): BackendMessage | undefined {
    const type = this.advance();
    if (type < 0) return undefined;
    try {
      const r = this.reader.reset(this.frameBuffer, this.frameStart + 5, this.frameEnd, this.messageOffset + 5);
      return decodeBackendBody(r, type);
    } catch (e) {
      return this.failWith(e);
    }
  }

  /** Drain every complete message (convenience; allocates an array). */
  drain(): BackendMessage[] {
    const out: BackendMessage[] = [];
    for (let m = this.next(); m !== undefined; m = this.next()) out.push(m);
    return out;
  }
}
