// A real pooler (from @quicpool/pooler) listening on QUIC (and TCP) in front of the run's real
// Postgres, development certificates, and small helpers shared by the client tests.
import { inject } from 'vitest';
import type {} from '@quicpool/pg-fixture';
import { generateDevCertificates, listenTcp, QuicListener } from '@quicpool/transport';
import type { QuicSessionStream } from '@quicpool/transport';
import { createPooler } from '@quicpool/pooler';
import type { Pooler } from '@quicpool/pooler';
import type { SessionManagerOptions } from '@quicpool/client';

export const pgInfo = inject('pg');

export type DevCerts = Awaited<ReturnType<typeof generateDevCertificates>>;

let certsP: Promise<DevCerts> | null = null;
/** One CA + server certificate for 'localhost' per test file. */
export function devCerts(): Promise<DevCerts> {
  certsP ??= generateDevCertificates({ names: ['localhost'] });
  return certsP;
}

export interface TestPooler {
  readonly pooler: Pooler;
  readonly listener: QuicListener;
  /** `127.0.0.1:<udp port>` */
  readonly endpoint: string;
  readonly tcpPort: number;
  close(): Promise<void>;
}

export async function startQuicPooler(o: { maxStreamsPerConnection?: number; poolSize?: number; earlyData?: 'wait' | 'read-only' } = {}): Promise<TestPooler> {
  const certs = await devCerts();
  const pooler = createPooler({
    server: { host: pgInfo.host, port: pgInfo.port },
    users: { [pgInfo.user]: { password: pgInfo.password }, [pgInfo.trustUser]: { auth: 'trust' } },
    pool: { poolSize: o.poolSize ?? 10, queryWaitTimeoutMs: 20_000 },
    ...(o.earlyData !== undefined ? { earlyData: o.earlyData } : {}),
  });
  const listener = await QuicListener.listen({
    cert: certs.certPem, key: certs.keyPem, host: '127.0.0.1', port: 0,
    ...(o.maxStreamsPerConnection !== undefined ? { maxStreamsPerConnection: o.maxStreamsPerConnection } : {}),
  });
  pooler.listen(listener);
  const tcp = await listenTcp({ host: '127.0.0.1', port: 0 });
  pooler.listen(tcp);
  return {
    pooler,
    listener,
    endpoint: `127.0.0.1:${listener.address().port}`,
    tcpPort: tcp.address().port,
    close: async () => {
      // The listener first: its forced close sends CONNECTION_CLOSE to every client at once.
      await listener.close({ graceful: false });
      await pooler.close({ graceful: false });
    },
  };
}

/** Session manager options for these poolers (verified against the dev CA, name 'localhost'). */
export async function quicOptions(endpoints: string[], extra: Partial<SessionManagerOptions> = {}): Promise<SessionManagerOptions> {
  const certs = await devCerts();
  return { endpoints, ca: certs.caPem, serverName: 'localhost', ...extra };
}

/** pg connection settings: the trust user (no SCRAM cost per session). */
export const trustLogin = { user: pgInfo.trustUser, database: pgInfo.database } as const;
/** pg connection settings: the SCRAM superuser. */
export const scramLogin = { user: pgInfo.user, password: pgInfo.password, database: pgInfo.database } as const;

/** The error a promise rejects with (fails the test when it resolves). */
export async function rejection(p: Promise<unknown>): Promise<Error & { code?: string }> {
  try {
    await p;
  } catch (e) {
    return e as Error & { code?: string };
  }
  throw new Error('expected a rejection');
}

/** Polls `cond` every 10 ms, at most `ms`. */
export async function until(cond: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Gives a session stream back without using it: the server sees an empty session end. */
export function discardStream(s: QuicSessionStream): void {
  s.on('error', () => undefined);
  s.resume();
  s.end();
}
