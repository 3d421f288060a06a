// The 0-RTT replay policy's one rule for the driver: what could do harm if a replayed QUIC
// connection did it (reach a backend, cancel a query) waits until the handshake is confirmed,
// which a replay never achieves.
import type { SessionStream } from '@quicpool/transport';

/** Runs `run` once `stream`'s handshake is confirmed (at once when nothing is left to confirm), else `replayed`. */
export function whenConfirmed(stream: SessionStream, run: () => void, replayed: () => void = () => undefined): void {
  const replay = stream.replayWindow();
  if (replay === null) run();
  else replay.then(run, replayed);
}
