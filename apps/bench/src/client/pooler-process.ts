// The pooler of bench:client in its own process (createPooler with a direct-TLS and a QUIC
// listener), so the client process's RSS and file descriptors are the client's only. The bench
// forks its own program with POOLER_FLAG; the worker prints "READY {json}" once listening and
// stops on SIGTERM or when its stdin (held by the bench) ends.
import { createPooler } from '@quicpool/pooler';
import { listenTls, QuicListener } from '@quicpool/transport';
import { startWorkerProcess } from '../process/worker-process.js';

export const POOLER_FLAG = '--client-bench-pooler';

export interface PoolerWorkerConfig {
  readonly serverHost: string;
  readonly serverPort: number;
  /** Authenticated by the pooler with trust (and by Postgres with trust). */
  readonly trustUser: string;
  /** Authenticated by the pooler with SCRAM-SHA-256 (and by Postgres with SCRAM). */
  readonly scramUser: string;
  readonly scramPassword: string;
  readonly poolSize: number;
  readonly certPem: string;
  readonly keyPem: string;
}

export interface PoolerPorts {
  /** Direct TLS over TCP (TLS from the first byte, ALPN 'postgresql'). */
  readonly tls: number;
  /** QUIC (UDP). */
  readonly quic: number;
}

export interface RunningPooler {
  readonly ports: PoolerPorts;
  readonly pid: number;
  stop(): Promise<void>;
}

/** The worker side: runs until SIGTERM or until its stdin ends. */
export async function runPoolerWorker(config: PoolerWorkerConfig): Promise<void> {
  const pooler = createPooler({
    server: { host: config.serverHost, port: config.serverPort },
    users: { [config.trustUser]: { auth: 'trust' }, [config.scramUser]: { password: config.scramPassword } },
    pool: { poolSize: config.poolSize, poolMode: 'transaction', queryWaitTimeoutMs: 60_000 },
    maxClientConnections: 10_000,
  });
  // A generous handshake timeout: 2,000 TLS handshakes at once on a busy 2-core machine take a while.
  const tls = await listenTls({ host: '127.0.0.1', port: 0, cert: config.certPem, key: config.keyPem, handshakeTimeoutMs: 60_000, backlog: 4096 });
  const quic = await QuicListener.listen({ host: '127.0.0.1', port: 0, cert: config.certPem, key: config.keyPem });
  pooler.listen(tls);
  pooler.listen(quic);
  const ports: PoolerPorts = { tls: tls.address().port, quic: quic.address().port };
  process.stdout.write(`READY ${JSON.stringify(ports)}\n`);
  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    void Promise.allSettled([quic.close({ graceful: false }), pooler.close({ graceful: false })]).finally(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.stdin.on('end', stop).resume();
}

/** The bench side: forks `script` as the pooler worker and waits for its ports. */
export async function startPoolerProcess(script: string, config: PoolerWorkerConfig): Promise<RunningPooler> {
  const w = await startWorkerProcess({
    name: 'pooler worker',
    args: [script, POOLER_FLAG, JSON.stringify(config)],
    startTimeoutMs: 15_000,
    ready: (line) => {
      const m = /^READY (.*)$/.exec(line);
      return m === null ? null : (JSON.parse(m[1] ?? '{}') as PoolerPorts);
    },
  });
  return { ports: w.ready, pid: w.pid, stop: () => w.stop() };
}
