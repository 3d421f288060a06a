// A QUIC listener's row of SHOW QUIC and the metrics, in the main thread or a worker.
import type { QuicListenerRow } from '@quicpool/pooler';
import type { QuicListener } from '@quicpool/transport';

export function quicRow(listener: QuicListener, worker: number): QuicListenerRow {
  const s = listener.stats();
  const h = listener.pathHealth();
  return {
    listener: 'quic', worker, connections: s.connections, streams: s.streams, handshakes: s.handshakes, handshakesCompleted: s.handshakesCompleted, handshakesFailed: s.handshakesFailed,
    datagramsIn: s.datagramsIn, datagramsOut: s.datagramsOut, datagramsDropped: s.datagramsDropped,
    bytesIn: s.bytesIn, bytesOut: s.bytesOut,
    avgRttMs: h.rttMsAvg === null ? null : Math.round(h.rttMsAvg), maxRttMs: h.rttMsMax,
    packetsSent: h.packetsSent, packetsLost: h.packetsLost,
  };
}
