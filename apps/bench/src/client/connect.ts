// Opens bench:client's sessions: pg.Client with TLS after SSLRequest (the daemon's only TLS, as Postgres's), and QUIC.
import pg from 'pg';
import type { SessionManagerOptions } from '@quicpool/client';

export type Login = Readonly<{ user: string; password?: string; database: string }>;

export interface BenchTargets {
  readonly host: string;
  /** TCP port of the daemon (TLS after SSLRequest), or of the relay in front of it. */
  readonly tlsPort: number;
  /** UDP port of the pooler's QUIC listener (or of the emulator in front of it). */
  readonly quicPort: number;
  /** CA that signed the pooler's certificate (for the name 'localhost'). */
  readonly caPem: string;
}

/** pg settings for a TCP+TLS session (certificate and name verified). */
export function tlsClientConfig(t: BenchTargets, login: Login): pg.ClientConfig {
  return { host: t.host, port: t.tlsPort, ...login, ssl: { ca: t.caPem, servername: 'localhost', rejectUnauthorized: true } };
}

/** Session manager options for the QUIC listener (certificate and name verified). */
export function quicManagerOptions(t: BenchTargets, extra: Partial<SessionManagerOptions> = {}): SessionManagerOptions {
  return { endpoints: [`${t.host}:${t.quicPort}`], ca: t.caPem, serverName: 'localhost', ...extra };
}

/** ms from a new pg.Client's connect() to the row of `query`, the client ended afterwards. */
export async function firstRowMs(config: pg.ClientConfig, query = 'select 1'): Promise<number> {
  const client = new pg.Client(config);
  const t0 = performance.now();
  await client.connect();
  await client.query(query);
  const ms = performance.now() - t0;
  await client.end();
  return ms;
}

/** Runs `open` `count` times, `concurrency` at once; after a failure starts no more, and throws it once all have settled. */
export async function openMany(count: number, concurrency: number, open: () => Promise<void>): Promise<void> {
  let started = 0;
  const failures: unknown[] = [];
  const lane = async (): Promise<void> => {
    while (started < count && failures.length === 0) {
      started++;
      await open().catch((e: unknown) => void failures.push(e));
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, lane));
  if (failures.length > 0) throw failures[0];
}
