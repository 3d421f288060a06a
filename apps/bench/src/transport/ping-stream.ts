// The two ends of a ping-pong stream: the server echoes every byte; the client keeps one request in flight per
// stream, a round trip complete at every `payloadBytes` bytes back (a transport may split or merge responses).
import { performance } from 'node:perf_hooks';
import type { SessionStream } from '@quicpool/transport';

export function echo(stream: SessionStream): void {
  stream.on('error', () => {});
  stream.on('data', (data: Buffer) => stream.write(data));
}

/** Writes a request on every stream, and again at every answer until the returned `stop()`; each answer's latency goes to `onRoundTrip`. */
export function keepBusy(streams: readonly SessionStream[], payloadBytes: number, onRoundTrip: (ms: number) => void): () => void {
  const payload = Buffer.alloc(payloadBytes, 0x61);
  let running = true;
  for (const stream of streams) {
    let received = 0;
    let sentAt = performance.now();
    stream.on('error', () => {});
    stream.on('data', (chunk: Buffer) => {
      received += chunk.length;
      while (received >= payloadBytes) {
        received -= payloadBytes;
        const now = performance.now();
        onRoundTrip(now - sentAt);
        if (!running) return;
        sentAt = now;
        stream.write(payload);
      }
    });
    stream.write(payload);
  }
  return () => void (running = false);
}
