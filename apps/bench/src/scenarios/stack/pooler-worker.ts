// The quicpool pooler as its own process (so its CPU and RSS columns are its own): `createPooler`
// from @quicpool/pooler with a plain TCP listener (TLS after SSLRequest when a certificate is
// given, as Postgres does) and/or a QUIC listener, in transaction mode.
import { createPooler } from '@quicpool/pooler';
import { listenTcp, QuicListener } from '@quicpool/transport';
import type { SessionListener } from '@quicpool/transport';
import { serveUntilStopped } from './child.js';

export interface PoolerWorkerConfig {
  server: { host: string; port: number };
  user: string;
  password: string;
  poolSize: number;
  /** Address the listeners bind to. */
  host: string;
  tcp: boolean;
  /** Certificate for TLS after SSLRequest on the TCP listener, and for QUIC. */
  cert: { certPem: string; keyPem: string } | null;
  quic: boolean;
}

export interface PoolerReady {
  pid: number;
  tcpPort: number | null;
  quicPort: number | null;
}

export async function runPoolerWorker(config: PoolerWorkerConfig): Promise<void> {
  const pooler = createPooler({
    server: config.server,
    users: { [config.user]: { password: config.password } },
    pool: { poolSize: config.poolSize, poolMode: 'transaction' },
    maxClientConnections: 20_000,
    ...(config.cert === null ? {} : { tls: { cert: config.cert.certPem, key: config.cert.keyPem } }),
  });
  const listeners: SessionListener[] = [];
  let tcpPort: number | null = null;
  let quicPort: number | null = null;
  if (config.tcp) {
    const tcp = await listenTcp({ host: config.host, port: 0 });
    pooler.listen(tcp);
    listeners.push(tcp);
    tcpPort = tcp.address().port;
  }
  if (config.quic) {
    if (config.cert === null) throw new Error('QUIC needs a certificate');
    const quic = await QuicListener.listen({ cert: config.cert.certPem, key: config.cert.keyPem, host: config.host, port: 0 });
    pooler.listen(quic);
    quicPort = quic.address().port;
  }
  const ready: PoolerReady = { pid: process.pid, tcpPort, quicPort };
  serveUntilStopped(ready, () => pooler.close({ graceful: false }));
}
