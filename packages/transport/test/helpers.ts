// Test helpers shared by the transport suites: deterministic random data, backpressure-aware
// writing, reading to EOF, and waiting for a stream's error or close.
import { once } from 'node:events';
import type { Duplex } from 'node:stream';
import { seededRandom as rng } from '@quicpool/pg-fixture';
import type { SessionListener, SessionStream } from '../src/index.js';

export function randomBytes(size: number, seed: number): Buffer {
  const next = rng(seed);
  const out = Buffer.allocUnsafe(size);
  for (let i = 0; i < size; i++) out[i] = Math.floor(next() * 256);
  return out;
}

/** Writes `data` in random-sized chunks (1 B .. maxChunk), waiting for 'drain' when told to, then ends. */
export async function writeChunked(stream: Duplex, data: Buffer, seed: number, maxChunk = 65_536): Promise<void> {
  const next = rng(seed);
  let offset = 0;
  while (offset < data.length) {
    const size = Math.min(data.length - offset, 1 + Math.floor(next() * maxChunk));
    const more = stream.write(data.subarray(offset, offset + size));
    offset += size;
    if (!more) {
      // Both waits' listeners go once either fires (events.once also listens for 'error').
      const done = new AbortController();
      await Promise.race([once(stream, 'drain', { signal: done.signal }), once(stream, 'close', { signal: done.signal })]).finally(() => done.abort());
    }
    if (stream.destroyed) throw new Error('stream destroyed while writing');
  }
  stream.end();
}

/** Reads everything until EOF (without destroying the stream, unlike `for await`, so it can still write). */
export function readAll(stream: Duplex): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.once('end', () => resolve(Buffer.concat(chunks)));
    stream.once('error', reject);
  });
}

/** Resolves with the first 'error' the stream emits, or null if it closes without one. */
export function nextError(stream: Duplex): Promise<(Error & { code?: string }) | null> {
  return new Promise((resolve) => {
    stream.once('error', (error: Error) => resolve(error));
    stream.once('close', () => setImmediate(() => resolve(null)));
  });
}

/** Resolves when the stream has emitted 'close' (immediately if it already has). */
export function closed(stream: Duplex): Promise<void> {
  if (stream.closed) return Promise.resolve();
  return once(stream, 'close').then(() => undefined);
}

/** Reads exactly `size` bytes (for small protocol exchanges). */
export function readBytes(stream: Duplex, size: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let have = 0;
    const onData = (chunk: Buffer): void => {
      chunks.push(chunk);
      have += chunk.length;
      if (have >= size) {
        stream.off('data', onData);
        stream.off('error', reject);
        stream.pause();
        const all = Buffer.concat(chunks);
        if (all.length > size) stream.unshift(all.subarray(size));
        resolve(all.subarray(0, size));
      }
    };
    stream.on('data', onData);
    stream.once('error', reject);
  });
}

/** Pairs each dialed stream with the session the listener accepted for it. */
export function acceptedPairs(listener: SessionListener): (client: SessionStream) => Promise<SessionStream> {
  const waiting: Array<(stream: SessionStream) => void> = [];
  const early: SessionStream[] = [];
  listener.onSession((stream) => {
    const take = waiting.shift();
    if (take) take(stream);
    else early.push(stream);
  });
  return async () => {
    const ready = early.shift();
    if (ready) return ready;
    return new Promise<SessionStream>((resolve) => waiting.push(resolve));
  };
}

