import { Framer, DEFAULT_MAX_MESSAGE_SIZE, SMALL_MESSAGE_LIMIT, limitTable } from '../frame.js';
import type { DecoderLimits, RawMessage } from '../frame.js';
import { Reader } from '../reader.js';
import { decodeStartupBody } from '../startup.js';
import { decodeFrontendBody } from './decode.js';
import type { AuthenticationResponseKind, FrontendMessage } from './messages.js';

/** Postgres's PG_MAX_AUTH_TOKEN_LENGTH: 'p' messages arrive before authentication. */
export const MAX_AUTH_MESSAGE_SIZE = 65_535;

export interface FrontendDecoderOptions extends DecoderLimits {
  /** Start in startup mode (default true): the first packet has no type byte. */
  startup?: boolean;
  /** How to decode 'p' messages; see `expectAuthentication`. */
  authentication?: AuthenticationResponseKind;
}

/**
 * Decodes the byte stream a client sends. Starts in startup mode: SSLRequest and
 * GSSENCRequest are followed by another startup packet, a StartupMessage by
 * typed messages, a CancelRequest by nothing (more bytes are a ProtocolError).
 *
 * 'p' messages (GSSResponse, PasswordMessage, SASLInitialResponse, SASLResponse
 * share the type byte) are decoded as set by `expectAuthentication(kind)`; with no
 * kind set they come out as a generic `AuthenticationResponse { data }`. After a
 * SASLInitialResponse the expected kind moves on to SASLResponse by itself.
 */
export class FrontendDecoder extends Framer {
  private readonly reader = new Reader();
  private authKind: AuthenticationResponseKind | undefined;

  constructor(opts: FrontendDecoderOptions = {}) {
    const max = opts.maxMessageSize ?? DEFAULT_MAX_MESSAGE_SIZE;
    if (!(max >= 4 && max <= 0x7fffffff)) throw new RangeError(`bad maxMessageSize ${max}`);
    const small = Math.min(max, SMALL_MESSAGE_LIMIT);
    super(
      limitTable({
        B: max, F: max, P: max, Q: max, d: max, f: max,
        C: small, D: small, E: small, H: small, S: small, X: small, c: small,
        p: Math.min(max, MAX_AUTH_MESSAGE_SIZE),
      }),
      opts.startup ?? true,
      opts,
    );
    this.authKind = opts.authentication;
  }

  /** Decode following 'p' messages as `kind` (undefined: generic AuthenticationResponse). */
  expectAuthentication(kind: AuthenticationResponseKind | undefined): void {
    this.authKind = kind;
  }

  get expectedAuthentication(): AuthenticationResponseKind | undefined {
    return this.authKind;
  }

  /** Next whole message as raw bytes (type 0 for startup packets), or undefined. */
  nextRaw(): RawMessage | undefined {
    const type = this.advance();
    return type < 0 ? undefined : { type, bytes: this.frameBytes() };
  }

  /** Next message decoded, or undefined until more bytes arrive. */
  next(): FrontendMessage | undefined {
    const type = this.advance();
    if (type < 0) return undefined;
    try {
      const f = this.frameBuffer;
      if (type === 0) return decodeStartupBody(this.reader.reset(f, 0, this.frameEnd, this.messageOffset));
      const r = this.reader.reset(f, this.frameStart + 5, this.frameEnd, this.messageOffset + 5);
      const m = decodeFrontendBody(r, type, this.authKind);
      if (m.type === 'SASLInitialResponse') this.authKind = 'SASLResponse';
      return m;
    } catch (e) {
      return this.failWith(e);
    }
  }

  /** Drain every complete message (convenience; allocates an array). */
  drain(): FrontendMessage[] {
    const out: FrontendMessage[] = [];
    for (let m = this.next(); m !== undefined; m = this.next()) out.push(m);
    return out;
  }
}
