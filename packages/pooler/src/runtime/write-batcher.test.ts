import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { WriteBatcher } from './write-batcher.js';

/** A stream that records what it is given; `holds` says whether it keeps written memory (TLS does). */
class Recorder extends Writable {
  readonly given: Buffer[] = [];
  constructor(private readonly holds: boolean) {
    super();
  }
  holdsWrittenBytes(): boolean {
    return this.holds;
  }
  override _write(chunk: Buffer, _e: BufferEncoding, done: () => void): void {
    this.given.push(chunk);
    done();
  }
}

/** A stream with a 4-byte buffer whose writes complete only when complete() is called. */
class SlowStream extends Writable {
  readonly given: Buffer[] = [];
  private waiting: (() => void) | null = null;
  constructor() {
    super({ highWaterMark: 4 });
  }
  holdsWrittenBytes(): boolean {
    return false;
  }
  override _write(chunk: Buffer, _e: BufferEncoding, done: () => void): void {
    this.given.push(chunk);
    this.waiting = done;
  }
  complete(): void {
    const done = this.waiting;
    this.waiting = null;
    done?.();
  }
}

describe('WriteBatcher', () => {
  it('flushes what a read cycle collected when the outermost cycle ends, adjacent views as one', () => {
    const batcher = new WriteBatcher();
    const out = new Recorder(false);
    const w = batcher.writer(out);
    const read = Buffer.from('abcdefgh');
    batcher.beginCycle();
    batcher.beginCycle();
    w.write(read.subarray(0, 3));
    w.write(read.subarray(3, 8));
    expect(batcher.endCycle()).toBe(true);
    expect(out.given).toHaveLength(0); // the inner end does not flush
    expect(batcher.endCycle()).toBe(true);
    expect(out.given.map((b) => b.toString())).toEqual(['abcdefgh']);
    expect(out.given[0]!.buffer).toBe(read.buffer); // one view of the read's memory, no copy
  });

  it('copies a small view for a stream that keeps its writes, so the read buffer stays reusable', () => {
    const batcher = new WriteBatcher();
    const out = new Recorder(true);
    const w = batcher.writer(out);
    const read = Buffer.from('answer');
    batcher.beginCycle();
    w.write(read);
    expect(batcher.endCycle()).toBe(true);
    read.fill(0x78); // the next read overwrites the buffer
    expect(out.given.map((b) => b.toString())).toEqual(['answer']);
  });

  it('keeps a large view instead of copying it: the cycle reports its bytes referenced', () => {
    const batcher = new WriteBatcher();
    const out = new Recorder(true);
    const w = batcher.writer(out);
    const read = Buffer.alloc(64 * 1024, 0x61);
    batcher.beginCycle();
    w.write(read);
    expect(batcher.endCycle()).toBe(false);
    expect(out.given[0]!.buffer).toBe(read.buffer);
    // The next cycle starts clean.
    batcher.beginCycle();
    expect(batcher.endCycle()).toBe(true);
  });

  it('flushes writes made outside a cycle at the end of the turn', async () => {
    const batcher = new WriteBatcher();
    const out = new Recorder(false);
    batcher.writer(out).write(Buffer.from('later'));
    expect(out.given).toHaveLength(0);
    await new Promise((resolve) => process.nextTick(resolve));
    expect(out.given.map((b) => b.toString())).toEqual(['later']);
  });

  it('a cycle whose handler throws still flushes what it collected', () => {
    const batcher = new WriteBatcher();
    const out = new Recorder(false);
    const w = batcher.writer(out);
    expect(() => {
      batcher.beginCycle();
      try {
        w.write(Buffer.from('before'));
        throw new Error('boom');
      } finally {
        batcher.endCycle();
      }
    }).toThrow('boom');
    expect(out.given.map((b) => b.toString())).toEqual(['before']);
  });

  it('reports a full stream from the flush on, until it drains', async () => {
    const batcher = new WriteBatcher();
    const out = new SlowStream(); // a 4-byte buffer whose writes complete when told to
    const w = batcher.writer(out);
    batcher.beginCycle();
    expect(w.write(Buffer.from('first'))).toBe(true); // collected: the stream was not asked yet
    batcher.endCycle();
    batcher.beginCycle();
    expect(w.write(Buffer.from('second'))).toBe(false); // the flush of 'first' filled it
    batcher.endCycle();
    const drained = new Promise((resolve) => out.once('drain', resolve));
    out.complete(); // 'first'; the stream then writes 'second'
    out.complete();
    await drained;
    batcher.beginCycle();
    expect(w.write(Buffer.from('third'))).toBe(true);
    batcher.endCycle();
    out.complete();
    expect(out.given.map((b) => b.toString())).toEqual(['first', 'second', 'third']);
  });

  it('end() writes what was collected, then the last bytes, and drops what comes after', async () => {
    const batcher = new WriteBatcher();
    const out = new Recorder(false);
    const w = batcher.writer(out);
    w.write(Buffer.from('answer'));
    w.end(Buffer.from('bye'));
    w.write(Buffer.from('late'));
    await new Promise((resolve) => out.once('finish', resolve));
    await new Promise((resolve) => process.nextTick(resolve));
    expect(out.given.map((b) => b.toString())).toEqual(['answer', 'bye']);
  });
});

