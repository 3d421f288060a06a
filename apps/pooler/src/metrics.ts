// Prometheus metrics (prom-client): pool, client, server, transaction, latency and QUIC figures,
// labelled by database, user and transport. Gauges are read from the pooler at scrape time;
// transaction counters and histograms are fed by the pooler's transaction events. With worker
// threads each worker keeps these for its pooler and the main thread adds them up (summed; the
// RTT averaged, PAUSE the maximum), beside the process's own metrics and one series per worker.
import { createServer } from 'node:http';
import type { Server, ServerResponse } from 'node:http';
import { AggregatorRegistry, Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { ClientRow, Pooler, QuicListenerRow, WorkerRow } from '@quicpool/pooler';
import { addTransactionMetrics } from './transaction-metrics.js';

export interface MetricsEndpoint {
  readonly port: number;
  close(): Promise<void>;
}

/** What a metrics endpoint serves: the exposition text and its content type. */
export type Exposition = () => Promise<{ contentType: string; body: string }>;

export const expositionOf = (registry: Registry): Exposition => async () => ({ contentType: registry.contentType, body: await registry.metrics() });

/**
 * The pooler's metrics. `process: false` leaves out the process's own (CPU, memory, event loop):
 * a worker thread's would be the process's, counted once per worker.
 */
export function createMetrics(pooler: Pooler, quic: () => readonly QuicListenerRow[], o: { process?: boolean } = {}): Registry {
  const registry = new Registry();
  if (o.process ?? true) collectDefaultMetrics({ register: registry, prefix: 'quicpool_' });
  const poolLabels = ['database', 'user'] as const;

  const poolGauge = (name: string, help: string, pick: (p: ReturnType<Pooler['stats']>['pools'][number]) => number): void => {
    new Gauge({
      name,
      help,
      labelNames: poolLabels,
      registers: [registry],
      collect() {
        this.reset();
        for (const p of pooler.stats().pools) this.set({ database: p.database, user: p.user }, pick(p));
      },
    });
  };
  poolGauge('quicpool_pool_servers_active', 'Server connections lent to clients.', (p) => p.active);
  poolGauge('quicpool_pool_servers_idle', 'Idle server connections.', (p) => p.idle);
  poolGauge('quicpool_pool_servers_connecting', 'Server connections being opened.', (p) => p.connecting);
  poolGauge('quicpool_pool_clients_waiting', 'Clients waiting for a server connection.', (p) => p.waiting);
  poolGauge('quicpool_pool_server_connects_total', 'Server connections opened (monotonic).', (p) => p.connectsTotal);
  poolGauge('quicpool_pool_wait_timeouts_total', 'Clients that got no server connection in time (monotonic).', (p) => p.waitTimeoutsTotal);
  poolGauge('quicpool_pool_server_down', '1 while the pool\'s server logins fail for a reason that passes (restart, failover): its clients wait (upstream.outage_wait_ms).', (p) => (p.serverDown ? 1 : 0));
  new Gauge({
    name: 'quicpool_pool_server_host',
    help: 'The server host each pool logs in to now (value 1; upstream.hosts, target_session_attrs).',
    labelNames: [...poolLabels, 'host'],
    registers: [registry],
    aggregator: 'max',
    collect() {
      this.reset();
      for (const p of pooler.stats().pools) this.set({ database: p.database, user: p.user, host: p.serverHost }, 1);
    },
  });
  new Gauge({
    name: 'quicpool_server_login_failures_total',
    help: 'Failed server logins by reason: the SQLSTATE the server sent (57P03 starting up, 53300 too many connections, ...) or the error (ECONNREFUSED, ETIMEDOUT, NO_TARGET: no host of the wanted kind) (monotonic).',
    labelNames: ['reason'],
    registers: [registry],
    collect() {
      for (const [reason, n] of Object.entries(pooler.view().serverLoginFailuresTotal)) this.set({ reason }, n);
    },
  });

  /** Client sessions counted by database, user and one more label (`third` null: not counted). */
  const clientGauge = (name: string, help: string, label: string, third: (c: ClientRow) => string | null): void => {
    new Gauge({
      name,
      help,
      labelNames: ['database', 'user', label],
      registers: [registry],
      collect() {
        this.reset();
        const counts = new Map<string, { labels: Record<string, string>; n: number }>();
        for (const c of pooler.view().clients) {
          const value = third(c);
          if (value === null) continue;
          const key = `${c.database}\0${c.user}\0${value}`;
          const e = counts.get(key) ?? { labels: { database: c.database, user: c.user, [label]: value }, n: 0 };
          e.n++;
          counts.set(key, e);
        }
        for (const e of counts.values()) this.set(e.labels, e.n);
      },
    });
  };
  clientGauge('quicpool_clients', 'Open client sessions.', 'transport', (c) => c.info.kind);
  clientGauge('quicpool_clients_pinned', 'Client sessions whose server connection the session-state policy pinned to them (transaction pooling), by what pinned it.', 'reason', (c) => c.pinned);
  new Gauge({
    name: 'quicpool_clients_accepted_total',
    help: 'Client sessions accepted since start (monotonic).',
    registers: [registry],
    collect() {
      this.set(pooler.stats().clientsAcceptedTotal);
    },
  });
  new Gauge({
    name: 'quicpool_clients_refused_total',
    help: 'Client sessions refused by limits or shutdown (monotonic).',
    registers: [registry],
    collect() {
      this.set(pooler.stats().clientsRefusedTotal);
    },
  });
  // Failed logins by where they stopped and transport (never by user: names a guesser sends would
  // make a series each). Abandoned logins (the client hung up, no error) are not failures.
  const loginFailures = new Counter({
    name: 'quicpool_client_login_failures_total',
    help: 'Admitted clients that got a FATAL error before their login completed (stage: authentication or server login).',
    labelNames: ['stage', 'transport'],
    registers: [registry],
  });
  const protocolViolations = new Counter({
    name: 'quicpool_client_protocol_violations_total',
    help: 'Client sessions ended with FATAL 08P01 (a protocol violation) outside a login, by transport.',
    labelNames: ['transport'],
    registers: [registry],
  });
  pooler.events.client.add((e) => {
    if (e.type === 'loginFailed' && e.sqlstate !== null) loginFailures.inc({ stage: e.stage, transport: e.info.kind });
    else if (e.type === 'protocolViolation') protocolViolations.inc({ transport: e.info.kind });
  });
  new Gauge({ name: 'quicpool_paused', help: '1 while PAUSEd.', registers: [registry], aggregator: 'max', collect() { this.set(pooler.view().paused ? 1 : 0); } });

  addTransactionMetrics(registry, pooler);

  const quicGauge = (name: string, help: string, pick: (q: QuicListenerRow) => number, aggregator: 'sum' | 'average' = 'sum'): void => {
    new Gauge({
      name,
      help,
      labelNames: ['listener'],
      registers: [registry],
      aggregator,
      collect() {
        this.reset();
        for (const q of quic()) this.set({ listener: q.listener }, pick(q));
      },
    });
  };
  quicGauge('quicpool_quic_connections', 'Open QUIC connections.', (q) => q.connections);
  quicGauge('quicpool_quic_streams', 'Open QUIC streams (sessions).', (q) => q.streams);
  new Gauge({
    name: 'quicpool_quic_handshakes_total',
    help: 'QUIC handshakes by outcome: completed, or failed (closed before completing: ALPN mismatch, a rejected certificate, a timeout) (monotonic).',
    labelNames: ['listener', 'outcome'],
    registers: [registry],
    aggregator: 'sum',
    collect() {
      this.reset();
      for (const q of quic()) {
        this.set({ listener: q.listener, outcome: 'failed' }, q.handshakesFailed);
        this.set({ listener: q.listener, outcome: 'completed' }, q.handshakesCompleted);
      }
    },
  });
  quicGauge('quicpool_quic_datagrams_in_total', 'UDP datagrams received (monotonic).', (q) => q.datagramsIn);
  quicGauge('quicpool_quic_datagrams_out_total', 'UDP datagrams sent (monotonic).', (q) => q.datagramsOut);
  quicGauge('quicpool_quic_datagrams_dropped_total', 'Datagrams for no known connection (monotonic).', (q) => q.datagramsDropped);
  quicGauge('quicpool_quic_rtt_ms', 'Mean smoothed RTT of the open QUIC connections (ms; 0 without connections).', (q) => q.avgRttMs ?? 0, 'average');
  quicGauge('quicpool_quic_packets_lost', 'Packets declared lost by the open QUIC connections.', (q) => q.packetsLost);
  return registry;
}

/** One series per worker (SHOW WORKERS as metrics), in the registry of the daemon's main thread. */
export function workerMetrics(registry: Registry, rows: () => Promise<readonly WorkerRow[]>): void {
  // One question to the workers per scrape: the gauges are collected together and share it.
  let asked: { at: number; rows: Promise<readonly WorkerRow[]> } | null = null;
  const rowsNow = (): Promise<readonly WorkerRow[]> => {
    const now = performance.now();
    if (asked === null || now - asked.at > 500) asked = { at: now, rows: rows() };
    return asked.rows;
  };
  const perWorker = (name: string, help: string, pick: (w: WorkerRow) => number | null): void => {
    new Gauge({
      name,
      help,
      labelNames: ['worker'],
      registers: [registry],
      async collect() {
        const latest = await rowsNow();
        this.reset();
        for (const w of latest) {
          const v = pick(w);
          if (v !== null) this.set({ worker: String(w.worker) }, v);
        }
      },
    });
  };
  perWorker('quicpool_worker_up', '1 while the worker runs (0 while it starts, stops or is replaced).', (w) => (w.state === 'running' ? 1 : 0));
  perWorker('quicpool_worker_clients', 'Client sessions of the worker.', (w) => w.clients);
  perWorker('quicpool_worker_servers', 'Server connections of the worker.', (w) => w.servers);
  perWorker('quicpool_worker_cpu_seconds_total', 'CPU time of the worker\'s thread (monotonic while it lives).', (w) => (w.cpuMs === null ? null : w.cpuMs / 1000));
  perWorker('quicpool_worker_restarts_total', 'Times the worker died and was replaced (monotonic).', (w) => w.restarts);
}

/** The daemon's exposition with worker threads: the workers' metrics added up, and the main thread's own. */
export function aggregatedExposition(main: Registry, workers: () => Promise<readonly (readonly Record<string, unknown>[])[]>): Exposition {
  return async () => {
    const parts = await workers();
    // prom-client's cluster aggregation: counters, gauges and histograms summed unless the metric says otherwise.
    const summed = AggregatorRegistry.aggregate(parts.map((p) => [...p]) as Parameters<typeof AggregatorRegistry.aggregate>[0]);
    const merged = Registry.merge([main, summed as Registry]);
    return { contentType: merged.contentType, body: await merged.metrics() };
  };
}

/** What /readyz reports: null when ready, else why not (the answer is 503 with that reason). */
export type Readiness = () => Promise<string | null>;

/**
 * GET /metrics (Prometheus), GET /healthz (200 while the process serves HTTP: liveness) and GET
 * /readyz (200 when the pooler listens, is not shutting down and reaches the upstream; else 503
 * with the reason: readiness for a load balancer or Kubernetes).
 */
export async function serveMetrics(exposition: Exposition, host: string, port: number, ready: Readiness = () => Promise.resolve(null)): Promise<MetricsEndpoint> {
  const text = (res: ServerResponse, status: number, body: string): void => void res.writeHead(status, { 'content-type': 'text/plain' }).end(body);
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET') return text(res, 405, 'GET /metrics, /healthz or /readyz\n');
    switch (path) {
      case '/metrics':
        exposition().then(
          ({ contentType, body }) => res.writeHead(200, { 'content-type': contentType }).end(body),
          (e: unknown) => text(res, 500, String(e)),
        );
        return;
      case '/healthz':
        return text(res, 200, 'ok\n');
      case '/readyz':
        ready().then(
          (why) => (why === null ? text(res, 200, 'ready\n') : text(res, 503, `not ready: ${why}\n`)),
          (e: unknown) => text(res, 503, `not ready: ${String(e)}\n`),
        );
        return;
      default:
        return text(res, 404, 'GET /metrics, /healthz or /readyz\n');
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  return {
    port: address !== null && typeof address === 'object' ? address.port : port,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}
