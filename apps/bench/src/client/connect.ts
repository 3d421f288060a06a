// How bench:client opens one session on each transport: pg.Client over TCP with TLS after
// SSLRequest (what the quicpool daemon serves, as Postgres does: one round trip more than direct
// TLS, which the daemon has no listener for), and the quicpool client over QUIC.
import pg from 'pg';
import { QuicPool, SessionManager } from '@quicpool/client';
import type { FastStartMode, SessionManagerOptions } from '@quicpool/client';

export interface Login {
  readonly user: string;
  readonly password?: string;
  readonly database: string;
}

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

/** A QuicPool on its own manager. */
export function quicPool(login: Login, max: number, manager: SessionManager, fastStart: FastStartMode = true): QuicPool {
  return new QuicPool({ ...login, max, idleTimeoutMillis: 0, quic: manager, fastStart });
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

/**
 * Runs `open` `count` times, at most `concurrency` at once. After a failure no more are started;
 * the first failure is thrown once every one under way has settled.
 */
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
