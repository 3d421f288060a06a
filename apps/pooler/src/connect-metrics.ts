// Prometheus metrics of `quicpool connect`: local sessions, QUIC streams and connections, bytes,
// handshakes and resumptions, all read from the agent at scrape time.
import { Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { AgentStats, QuicAgent } from '@quicpool/client';

export function createConnectMetrics(agent: QuicAgent): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'quicpool_connect_' });
  const gauge = (name: string, help: string, pick: (s: AgentStats) => number): void => {
    new Gauge({ name, help, registers: [registry], collect() { this.set(pick(agent.stats())); } });
  };
  gauge('quicpool_connect_sessions', 'Local sessions carried over a QUIC stream now.', (s) => s.active);
  gauge('quicpool_connect_sessions_waiting', 'Local sessions waiting for a QUIC stream now.', (s) => s.waiting);
  gauge('quicpool_connect_sessions_total', 'Local sessions carried since start (monotonic).', (s) => s.sessions);
  gauge('quicpool_connect_local_connections_total', 'Local connections accepted, TCP and unix (monotonic).', (s) => s.accepted);
  gauge('quicpool_connect_streams', 'QUIC streams in use now.', (s) => s.manager.streamsInUse);
  gauge('quicpool_connect_connections', 'QUIC connections that can carry streams now.', (s) => s.manager.connections);
  gauge('quicpool_connect_connections_connecting', 'QUIC connections still handshaking.', (s) => s.manager.connecting);
  gauge('quicpool_connect_handshakes_total', 'QUIC connections started: full handshakes and resumption attempts (monotonic).', (s) => s.manager.handshakes);
  gauge('quicpool_connect_resumptions_total', 'QUIC connections whose session ticket the pooler accepted (monotonic).', (s) => s.manager.resumptions);
  gauge('quicpool_connect_early_startups_total', 'StartupMessages sent in 0-RTT early data (monotonic).', (s) => s.earlyStartups);
  gauge('quicpool_connect_connection_failures_total', 'QUIC connection attempts that failed before their handshake completed (monotonic).', (s) => s.manager.connectionFailures);
  gauge('quicpool_connect_connections_lost_total', 'Established QUIC connections that died (monotonic).', (s) => s.manager.connectionsLost);
  gauge('quicpool_connect_cancels_total', 'CancelRequests carried (monotonic).', (s) => s.cancels);
  gauge('quicpool_connect_fast_starts_total', 'Local sessions the agent answered itself before the pooler (fast start; monotonic).', (s) => s.fastStarts);
  gauge('quicpool_connect_fast_starts_refused_total', 'Fast-started sessions whose login the pooler refused (monotonic).', (s) => s.fastStartsRefused);
  gauge('quicpool_connect_cancels_held_total', 'CancelRequests that waited for the pooler\'s key of a fast-started session (monotonic).', (s) => s.cancelsHeld);
  gauge('quicpool_connect_streams_lost_total', 'Local sessions whose QUIC stream failed under them (monotonic).', (s) => s.streamsLost);
  gauge('quicpool_connect_clients_vanished_total', 'Local clients gone without Terminate; their stream was reset (monotonic).', (s) => s.clientsVanished);
  new Gauge({
    name: 'quicpool_connect_backpressure_pauses_total',
    help: 'Times forwarding paused for the slower side (monotonic): up = the QUIC stream was full, down = the local client read slower.',
    labelNames: ['direction'],
    registers: [registry],
    collect() {
      const s = agent.stats();
      this.set({ direction: 'up' }, s.pausedUp);
      this.set({ direction: 'down' }, s.pausedDown);
    },
  });
  new Gauge({
    name: 'quicpool_connect_bytes_total',
    help: 'Bytes forwarded (monotonic): up = local clients to poolers, down = poolers to local clients.',
    labelNames: ['direction'],
    registers: [registry],
    collect() {
      const s = agent.stats();
      this.set({ direction: 'up' }, s.bytesUp);
      this.set({ direction: 'down' }, s.bytesDown);
    },
  });
  new Gauge({
    name: 'quicpool_connect_refused_total',
    help: 'Local sessions refused, by SQLSTATE (monotonic): 53300 limits, 08001 no pooler, 08P01 bad startup, 57P01 shutting down.',
    labelNames: ['sqlstate'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [sqlstate, n] of Object.entries(agent.stats().refused)) this.set({ sqlstate }, n);
    },
  });
  new Gauge({
    name: 'quicpool_connect_endpoint_down',
    help: '1 while a pooler endpoint is skipped after failing.',
    labelNames: ['endpoint'],
    registers: [registry],
    collect() {
      this.reset();
      for (const e of agent.stats().manager.endpoints) this.set({ endpoint: e.endpoint }, e.down ? 1 : 0);
    },
  });
  return registry;
}
