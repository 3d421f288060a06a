// (c) 2,000 sessions at once, one query each, from nothing open: the time until every row is
// back, through the WAN emulator. TCP+TLS: a pg.Pool of 2,000 (one TCP connection and TLS
// handshake per session). QUIC: a QuicPool of 2,000 over `connections` x `streams`.
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { SessionManager } from '@quicpool/client';
import type { BenchTargets, Login } from './connect.js';
import { quicManagerOptions, quicPool, tlsClientConfig } from './connect.js';

export interface DrainResult {
  readonly sessions: number;
  readonly ms: number;
  readonly failed: number;
  /** First failure message, if any. */
  readonly firstError: string | null;
}

async function drain(pool: pg.Pool, sessions: number): Promise<DrainResult> {
  let failed = 0;
  let firstError: string | null = null;
  pool.on('error', () => undefined);
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: sessions }, (_, i) =>
      pool.query('select $1::int as i', [i]).then(
        () => undefined,
        (e: Error) => {
          failed++;
          firstError ??= e.message;
        },
      ),
    ),
  );
  return { sessions, ms: performance.now() - t0, failed, firstError };
}

export async function drainTcp(t: BenchTargets, login: Login, sessions: number): Promise<DrainResult> {
  const pool = new pg.Pool({ ...tlsClientConfig(t, login), max: sessions, idleTimeoutMillis: 0 });
  try {
    return await drain(pool, sessions);
  } finally {
    await pool.end();
  }
}

export async function drainQuic(t: BenchTargets, login: Login, sessions: number, connections: number, streams: number): Promise<DrainResult> {
  const manager = new SessionManager(quicManagerOptions(t, { maxConnections: connections, streamsPerConnection: streams }));
  const pool = quicPool(login, sessions, manager);
  try {
    return await drain(pool, sessions);
  } finally {
    await pool.end();
    await manager.close();
  }
}
