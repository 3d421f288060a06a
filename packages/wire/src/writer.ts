/**
 * Growable buffer for encoding one message. `Writer.message(type)` reserves the
 * 5-byte header; `finish()` patches the length and returns an exact-size view.
 * Encoding rejects values the wire cannot carry (a NUL inside a string, an
 * integer out of range) with a RangeError: that is a caller bug, not a protocol error.
 */
export class Writer {
  private buf: Buffer;
  private pos = 0;
  private readonly lengthAt: number;

  private constructor(size: number, type: number) {
    this.buf = Buffer.allocUnsafe(size);
    if (type >= 0) {
      this.buf[0] = type;
      this.pos = 5;
      this.lengthAt = 1;
    } else {
      this.pos = 4;
      this.lengthAt = 0;
    }
  }

  /** A typed message: Byte1 type, Int32 length. */
  static message(type: number, sizeHint = 64): Writer {
    return new Writer(Math.max(sizeHint, 16), type);
  }

  /** A startup-phase packet: Int32 length only. */
  static startup(sizeHint = 64): Writer {
    return new Writer(Math.max(sizeHint, 16), -1);
  }

  private ensure(n: number): void {
    const need = this.pos + n;
    if (need <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < need) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  byte(v: number): this {
    if (!Number.isInteger(v) || v < 0 || v > 0xff) throw new RangeError(`Byte1 out of range: ${v}`);
    this.ensure(1);
    this.buf[this.pos++] = v;
    return this;
  }

  int16(v: number): this {
    this.ensure(2);
    this.buf.writeInt16BE(v, this.pos);
    this.pos += 2;
    return this;
  }

  int32(v: number): this {
    this.ensure(4);
    this.buf.writeInt32BE(v, this.pos);
    this.pos += 4;
    return this;
  }

  uint32(v: number): this {
    this.ensure(4);
    this.buf.writeUInt32BE(v, this.pos);
    this.pos += 4;
    return this;
  }

  /** A count as Int16 (0..32767). */
  count16(n: number, what: string): this {
    if (n > 0x7fff) throw new RangeError(`too many ${what}: ${n}`);
    return this.int16(n);
  }

  cstring(s: string): this {
    if (s.includes('\0')) throw new RangeError('a protocol String cannot contain NUL');
    const n = Buffer.byteLength(s, 'utf8');
    this.ensure(n + 1);
    this.buf.write(s, this.pos, n, 'utf8');
    this.pos += n;
    this.buf[this.pos++] = 0;
    return this;
  }

  bytes(b: Uint8Array): this {
    this.ensure(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
    return this;
  }

  /** Int32 length (-1 for null) followed by the bytes. */
  nullableBytes(b: Uint8Array | null): this {
    if (b === null) return this.int32(-1);
    return this.int32(b.length).bytes(b);
  }

  finish(): Buffer {
    this.buf.writeInt32BE(this.pos - this.lengthAt, this.lengthAt);
    return this.buf.subarray(0, this.pos);
  }
}
