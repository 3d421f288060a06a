// The two ends of a ping-pong stream, shared by the transport benchmarks: the server side echoes
// every byte back; the client side keeps one request in flight, a round trip complete at every
// `payload.length` bytes back (a transport may split or merge responses).
import { performance } from 'node:perf_hooks';
import type { SessionStream } from '@quicpool/transport';

export function echo(stream: SessionStream): void {
  stream.on('error', () => {});
  stream.on('data', (data: Buffer) => stream.write(data));
}

/** Writes `payload`, and again at every answer while `running()`; each answer's latency goes to `onRoundTrip`. */
export function keepBusy(stream: SessionStream, payload: Buffer, onRoundTrip: (ms: number) => void, running: () => boolean): void {
  const size = payload.length;
  let received = 0;
  let sentAt = performance.now();
  stream.on('error', () => {});
  stream.on('data', (chunk: Buffer) => {
    received += chunk.length;
    while (received >= size) {
      received -= size;
      const now = performance.now();
      onRoundTrip(now - sentAt);
      if (!running()) return;
      sentAt = now;
      stream.write(payload);
    }
  });
  stream.write(payload);
}
